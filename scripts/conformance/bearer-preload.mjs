// bearer-preload.mjs: loaded with `node --import` into the conformance CLI
// only, it makes the harness an authenticated client of the server under
// test. The CLI has no option to send request headers in `server` mode, and
// WebCodex serves /mcp only behind bearer authentication.
//
// It adds `Authorization: Bearer $WEBCODEX_CONFORMANCE_TOKEN` to every HTTP
// request whose origin is exactly $WEBCODEX_CONFORMANCE_ORIGIN and that does
// not already carry an Authorization header. Nothing else about a request is
// changed: method, path, Host, Origin, MCP headers and body go to the server
// as the harness wrote them, straight to the server (no proxy).
//
// How: the CLI sends with three clients. Global fetch and undici's request()
// both go through undici's global dispatcher: the CLI itself installs an
// undici 7 Agent as that dispatcher when it loads; this installs the same
// Agent from the CLI's own undici, composed with one header interceptor.
// node:http's request() (used for raw header-casing tests) is wrapped to add
// the header to the options object.
import { realpathSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';

const token = process.env.WEBCODEX_CONFORMANCE_TOKEN;
const origin = process.env.WEBCODEX_CONFORMANCE_ORIGIN;
if (!token || !origin) {
  throw new Error('bearer-preload: WEBCODEX_CONFORMANCE_TOKEN and WEBCODEX_CONFORMANCE_ORIGIN are required');
}
const want = new URL(origin).origin;

// Resolve undici from the conformance CLI's install (process.argv[1] is the
// CLI's bin, usually a node_modules/.bin symlink).
const require = createRequire(realpathSync(process.argv[1]));
const undici = require(require.resolve('undici'));

function hasAuthorization(headers) {
  if (headers == null) return false;
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) {
      return headers.some(([k]) => String(k).toLowerCase() === 'authorization');
    }
    for (let i = 0; i < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === 'authorization') return true;
    }
    return false;
  }
  if (typeof headers[Symbol.iterator] === 'function') {
    for (const [k] of headers) if (String(k).toLowerCase() === 'authorization') return true;
    return false;
  }
  return Object.keys(headers).some((k) => k.toLowerCase() === 'authorization');
}

function withAuthorization(headers) {
  const value = `Bearer ${token}`;
  if (headers == null) return { authorization: value };
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) return [...headers, ['authorization', value]];
    return [...headers, 'authorization', value];
  }
  if (typeof headers[Symbol.iterator] === 'function') {
    return [...Array.from(headers, ([k, v]) => [k, v]), ['authorization', value]];
  }
  return { ...headers, authorization: value };
}

const bearer = (dispatch) => (opts, handler) => {
  let o;
  try {
    o = new URL(String(opts.origin)).origin;
  } catch {
    o = '';
  }
  if (o === want && !hasAuthorization(opts.headers)) {
    opts = { ...opts, headers: withAuthorization(opts.headers) };
  }
  return dispatch(opts, handler);
};

undici.setGlobalDispatcher(new undici.Agent().compose(bearer));

// node:http. The CLI calls http.request(options, callback) with an options
// object (hostname, port, path, headers); other call shapes pass through.
const { hostname: wantHost, port: wantPort } = new URL(want);
const httpRequest = http.request;
http.request = function request(options, ...rest) {
  if (options && typeof options === 'object' && !(options instanceof URL) &&
      String(options.hostname ?? options.host) === wantHost && String(options.port) === wantPort &&
      !hasAuthorization(options.headers)) {
    options = { ...options, headers: withAuthorization(options.headers) };
  }
  return httpRequest.call(this, options, ...rest);
};
