// Preloaded with `node --require tests/peers/loopback.cjs ...` by the test suite.
//
// server-everything's Streamable HTTP mode calls `listen(PORT)` with no host, which
// binds every interface. A test server must only ever be reachable on this machine,
// so this shim makes any listen() that names a port but no host bind 127.0.0.1.
// Listens that already name a host, or that use a path/handle, are left alone.
"use strict";

const net = require("node:net");

const originalListen = net.Server.prototype.listen;

function isPort(value) {
  return (
    typeof value === "number" ||
    (typeof value === "string" && value !== "" && /^\d+$/.test(value))
  );
}

net.Server.prototype.listen = function listenOnLoopback(...args) {
  const first = args[0];
  if (first !== null && typeof first === "object" && !Array.isArray(first)) {
    // listen({ port, host?, path?, ... })
    if (first.path === undefined && first.handle === undefined && first.fd === undefined) {
      if (first.host === undefined || first.host === null || first.host === "") {
        args[0] = { ...first, host: "127.0.0.1" };
      }
    }
  } else if (isPort(first) || first === undefined || first === null) {
    // listen(port?, host?, backlog?, callback?): insert the host when it is missing.
    if (typeof args[1] !== "string") {
      args.splice(1, 0, "127.0.0.1");
      if (args[0] === undefined || args[0] === null) args[0] = 0;
    }
  }
  return originalListen.apply(this, args);
};
