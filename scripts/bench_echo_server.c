/* The C echo server that scripts/bench measures the fastest clients against.

   Built by scripts/bench with the system compiler (cc or gcc) into
   .cache/bench_echo_server; skipped when there is none. Speaks just enough
   MCP over stdio for the bench: initialize, tools/list (the tool echo),
   tools/call echo (the "message" argument copied back verbatim, escapes
   included), ping; any other request gets JSON-RPC error -32601 (so
   protocol="auto"'s probe falls back to the handshake); notifications are
   ignored. Replies to everything in one read(2) leave in one write(2): the
   server is never the bottleneck of a pipelined client. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

static char *out;
static size_t out_len, out_cap;

static void emit(const char *data, size_t n) {
    if (out_len + n > out_cap) {
        out_cap = (out_len + n) * 2;
        out = realloc(out, out_cap);
        if (!out) exit(2);
    }
    memcpy(out + out_len, data, n);
    out_len += n;
}

static void emits(const char *s) { emit(s, strlen(s)); }

static void flush_out(void) {
    size_t done = 0;
    while (done < out_len) {
        ssize_t n = write(1, out + done, out_len - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            exit(0);
        }
        done += (size_t)n;
    }
    out_len = 0;
}

/* The raw JSON text of the value after "key": (a number or a string with its quotes). */
static int field(const char *line, const char *end, const char *key, const char **start, size_t *len) {
    size_t klen = strlen(key);
    for (const char *p = line; p + klen < end; p++) {
        if (*p != '"' || memcmp(p + 1, key, klen) != 0 || p[klen + 1] != '"') continue;
        const char *q = p + klen + 2;
        while (q < end && (*q == ' ' || *q == ':')) q++;
        const char *s = q;
        if (q < end && *q == '"') {
            q++;
            while (q < end && *q != '"') q += (*q == '\\') ? 2 : 1;
            q++;
        } else {
            while (q < end && *q != ',' && *q != '}' && *q != ' ') q++;
        }
        if (q > end) return 0;
        *start = s;
        *len = (size_t)(q - s);
        return 1;
    }
    return 0;
}

static const char TOOLS[] =
    "{\"tools\":[{\"name\":\"echo\",\"description\":\"Echo a message back.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\"}},"
    "\"required\":[\"message\"]}}]}";

static void handle(const char *line, const char *end) {
    const char *id, *method, *message;
    size_t id_len, method_len, message_len;
    if (!field(line, end, "id", &id, &id_len)) return; /* a notification */
    if (!field(line, end, "method", &method, &method_len)) return; /* a reply */
    emits("{\"jsonrpc\":\"2.0\",\"id\":");
    emit(id, id_len);
#define IS(m) (method_len == sizeof(m) + 1 && memcmp(method + 1, m, sizeof(m) - 1) == 0)
    if (IS("tools/call")) {
        emits(",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
        if (field(line, end, "message", &message, &message_len) && *message == '"')
            emit(message, message_len);
        else
            emits("\"\"");
        emits("}]}}\n");
    } else if (IS("initialize")) {
        emits(",\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{}},"
              "\"serverInfo\":{\"name\":\"bench-echo-c\",\"version\":\"1.0\"}}}\n");
    } else if (IS("tools/list")) {
        emits(",\"result\":");
        emits(TOOLS);
        emits("}\n");
    } else if (IS("ping")) {
        emits(",\"result\":{}}\n");
    } else {
        emits(",\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}\n");
    }
}

int main(void) {
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    if (!buf) return 2;
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf) return 2;
        }
        ssize_t n = read(0, buf + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;
        len += (size_t)n;
        char *start = buf, *end = buf + len, *nl;
        while ((nl = memchr(start, '\n', (size_t)(end - start))) != NULL) {
            handle(start, nl);
            start = nl + 1;
        }
        len = (size_t)(end - start);
        memmove(buf, start, len);
        flush_out();
    }
}
