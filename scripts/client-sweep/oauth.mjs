// scripts/client-sweep/oauth.mjs: the MCP TypeScript SDK's OAuth client
// flow against a running `webcodex serve --oauth` (the built-in
// authorization server). Run by scripts/client-sweep.sh, which installs the
// SDKs next to this file, creates the console token and starts the server.
//
//   node oauth.mjs CLIENT URL     CLIENT: oauth-sdk-v1 | oauth-sdk-v2
//
// WEBCODEX_SWEEP_CONSOLE_TOKEN is a wc_pat_ API token: the person who signs
// in to the Runtime Console and approves the consent page. The SDK does the
// rest from the MCP endpoint's 401: protected resource metadata (RFC 9728),
// authorization server metadata (RFC 8414), Dynamic Client Registration
// (RFC 7591; a public client, token_endpoint_auth_method none, whose
// metadata lists the portless loopback redirect http://127.0.0.1/callback
// while it calls back on a port of its own, as Claude Code does), the
// authorization request with PKCE S256 and the resource indicator, the
// code exchange and the refresh. The provider's redirectToAuthorization is
// the browser: it signs in to the console with fetch and a cookie header it
// keeps itself, follows the authorization endpoint's redirect to the
// consent page, posts the consent form's hidden fields with
// decision=approve and the server's Origin, and stops at the callback
// (nothing listens there) with the code, state and iss.
//
// Steps, each reported: the unauthenticated 401 names the resource
// metadata; the first connect ends in UnauthorizedError after the browser
// approved; finishAuth redeems the code (v2 with the callback's
// parameters, so it checks iss; v1 with the code); a new connection lists
// the tools and calls project_overview; a call with a spoiled access token
// makes the SDK refresh (a rotated refresh token, no second consent); and
// after POST /oauth/revoke the revoked access token is answered 401. The
// script exits 1 when any step fails.
import { randomBytes } from 'node:crypto';

const [client, url] = process.argv.slice(2);
const consoleToken = process.env.WEBCODEX_SWEEP_CONSOLE_TOKEN;
if (!['oauth-sdk-v1', 'oauth-sdk-v2'].includes(client) || !url || !consoleToken) {
	console.error('usage: WEBCODEX_SWEEP_CONSOLE_TOKEN=wc_pat_... node oauth.mjs oauth-sdk-v1|oauth-sdk-v2 URL');
	process.exit(2);
}
const base = new URL(url).origin;
const project = 'agent:local:calc';
const callbackPort = 40000 + (randomBytes(2).readUInt16BE() % 20000);
const redirectUrl = `http://127.0.0.1:${callbackPort}/callback`;

let Client, StreamableHTTPClientTransport, UnauthorizedError;
if (client === 'oauth-sdk-v1') {
	({ Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
	({ StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js'));
	({ UnauthorizedError } = await import('@modelcontextprotocol/sdk/client/auth.js'));
} else {
	({ Client, StreamableHTTPClientTransport, UnauthorizedError } = await import('@modelcontextprotocol/client'));
}

const steps = [];
const problems = [];
function step(name, ok, detail) {
	steps.push(name);
	console.log(`  ${ok ? '✓' : '✗'} ${name}${detail ? `: ${detail}` : ''}`);
	if (!ok) problems.push(`${name}${detail ? `: ${detail}` : ''}`);
	return ok;
}
const short = (s) => String(s ?? '').slice(0, 500);

// browser is the person's browser on the console: a cookie it keeps
// itself, redirects followed only while they stay on the server.
const browser = {
	cookie: '',
	async request(target, init = {}) {
		const headers = { ...(init.headers ?? {}), ...(this.cookie ? { Cookie: this.cookie } : {}) };
		const res = await fetch(target, { ...init, headers, redirect: 'manual' });
		for (const c of res.headers.getSetCookie()) {
			const [pair] = c.split(';');
			if (pair.startsWith('wc_console=')) this.cookie = pair;
		}
		return res;
	},
	post(path, fields) {
		return this.request(base + path, {
			method: 'POST',
			headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: base },
			body: new URLSearchParams(fields).toString(),
		});
	},
	async signIn() {
		const res = await this.post('/console/login', { token: consoleToken });
		if (res.status !== 303 || !this.cookie) throw new Error(`console sign-in: HTTP ${res.status}, cookie ${this.cookie ? 'set' : 'missing'}`);
	},
	// consent opens authURL, follows the server's redirects to the consent
	// page, approves, and returns the URL the server sent the browser to.
	async consent(authURL) {
		let at = authURL;
		let res;
		for (let i = 0; i < 5; i++) {
			res = await this.request(at);
			if (![301, 302, 303, 307, 308].includes(res.status)) break;
			at = new URL(res.headers.get('location'), at).href;
			if (new URL(at).origin !== base) throw new Error(`the authorization endpoint redirected off the server, to ${at}`);
		}
		const page = await res.text();
		if (res.status !== 200 || new URL(at).pathname !== '/console/oauth/consent') {
			throw new Error(`consent page: HTTP ${res.status} at ${at}: ${short(page)}`);
		}
		const form = page.match(/<form[^>]*action="\/console\/oauth\/consent"[^>]*>([\s\S]*?)<\/form>/);
		if (!form) throw new Error(`no consent form on ${at}`);
		const fields = { decision: 'approve', project: '' };
		for (const m of form[1].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[unescape(m[1])] = unescape(m[2]);
		if (!fields.csrf_token) throw new Error('the consent form has no csrf_token');
		const out = await this.post('/console/oauth/consent', fields);
		const loc = out.headers.get('location');
		if (out.status !== 303 || !loc) throw new Error(`consent decision: HTTP ${out.status}: ${short(await out.text())}`);
		return loc;
	},
};

// unescape decodes the entities html/template writes in attribute values.
function unescape(s) {
	return s.replace(/&#(\d+);/g, (_, n) => String.fromCodePoint(Number(n))).replace(/&quot;/g, '"').replace(/&lt;/g, '<')
		.replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

// provider is an OAuthClientProvider with in-memory storage; its
// redirectToAuthorization drives the browser and keeps the callback URL.
const provider = {
	info: undefined,
	saved: undefined,
	verifier: undefined,
	discovery: undefined,
	lastState: undefined,
	callback: undefined,
	redirects: 0,
	browserError: undefined,
	get redirectUrl() {
		return redirectUrl;
	},
	get clientMetadata() {
		return {
			client_name: `WebCodex client sweep (${client})`,
			redirect_uris: ['http://127.0.0.1/callback'],
			grant_types: ['authorization_code', 'refresh_token'],
			response_types: ['code'],
			token_endpoint_auth_method: 'none',
		};
	},
	state() {
		this.lastState = randomBytes(16).toString('base64url');
		return this.lastState;
	},
	clientInformation() {
		return this.info;
	},
	saveClientInformation(info) {
		this.info = info;
	},
	tokens() {
		return this.saved;
	},
	saveTokens(tokens) {
		this.saved = tokens;
	},
	saveCodeVerifier(v) {
		this.verifier = v;
	},
	codeVerifier() {
		return this.verifier;
	},
	// The discovery state (v2 binds the callback to the authorization
	// server it recorded, SEP-2352).
	saveDiscoveryState(state) {
		this.discovery = state;
	},
	discoveryState() {
		return this.discovery;
	},
	async redirectToAuthorization(authorizationUrl) {
		this.redirects++;
		this.authorizationUrl = authorizationUrl.href;
		try {
			if (!browser.cookie) await browser.signIn();
			this.callback = await browser.consent(authorizationUrl.href);
		} catch (err) {
			this.browserError = err;
		}
	},
};

const transport = () => new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });

// 1. The unauthenticated 401 points at the resource metadata.
{
	const res = await fetch(url, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
		body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
	});
	const www = res.headers.get('www-authenticate') ?? '';
	step('unauthenticated POST /mcp -> 401 with resource_metadata', res.status === 401 && /resource_metadata="[^"]+"/.test(www),
		`HTTP ${res.status}, WWW-Authenticate: ${www}`);
}

// 2. The first connect: discovery, DCR, the browser's approval, then
// UnauthorizedError (the SDK waits for the application to call back).
// first is the transport of the first connect: finishAuth runs on it, as
// the SDK's examples do, so it knows the resource metadata it discovered.
const first = transport();
{
	const c = new Client({ name: 'webcodex-oauth-sweep', version: '1' });
	let err;
	try {
		await c.connect(first);
	} catch (e) {
		err = e;
	}
	step('first connect ends in UnauthorizedError for the redirect', err instanceof UnauthorizedError && provider.redirects === 1,
		err ? `${err.name}: ${short(err.message)}` : 'connect succeeded without authorization');
	step('dynamic client registration', /^wc_client_/.test(provider.info?.client_id ?? ''), `client_id ${provider.info?.client_id}`);
	const q = provider.authorizationUrl ? new URL(provider.authorizationUrl).searchParams : new URLSearchParams();
	step('authorization request (PKCE S256, resource, redirect)', q.get('code_challenge_method') === 'S256' && q.get('resource') === url &&
		q.get('redirect_uri') === redirectUrl, `scope=${q.get('scope')} resource=${q.get('resource')}`);
	if (provider.browserError) step('console approval', false, short(provider.browserError.message));
}
const cb = provider.callback ? new URL(provider.callback) : undefined;
const params = cb?.searchParams ?? new URLSearchParams();
const callbackOK = step('approval redirects to the callback with code, state and iss',
	cb !== undefined && `${cb.origin}${cb.pathname}` === redirectUrl && Boolean(params.get('code')) &&
	params.get('state') === provider.lastState && params.get('iss') === base,
	provider.callback ? `${cb.origin}${cb.pathname} state ${params.get('state') === provider.lastState ? 'matches' : 'differs'}, iss ${params.get('iss')}` : 'no callback');

// 3. The code exchange.
let connected;
if (callbackOK) {
	try {
		if (client === 'oauth-sdk-v2') await first.finishAuth(params);
		else await first.finishAuth(params.get('code'));
		step('finishAuth redeems the code', Boolean(provider.saved?.access_token),
			`token_type ${provider.saved?.token_type}, scope "${provider.saved?.scope}", refresh token ${provider.saved?.refresh_token ? 'issued' : 'missing'}`);
	} catch (e) {
		step('finishAuth redeems the code', false, `${e.name}: ${short(e.message)}`);
	}
}

// 4. A new connection with the tokens: tools/list and a read-only call.
if (provider.saved?.access_token) {
	try {
		connected = new Client({ name: 'webcodex-oauth-sweep', version: '1' });
		await connected.connect(transport());
		const { tools } = await connected.listTools();
		const names = tools.map((t) => t.name);
		step('tools/list with the access token', names.includes('project_overview'), `${names.length} tools`);
		const res = await connected.callTool({ name: 'project_overview', arguments: { project } });
		step('tools/call project_overview', res.structuredContent?.success === true && !res.isError,
			short(JSON.stringify(res.structuredContent?.error ?? 'success')));
	} catch (e) {
		step('connect and call with the access token', false, `${e.name}: ${short(e.message)}`);
	}
}

// 5. A spoiled access token: the server answers 401, the SDK refreshes
// (rotating the refresh token) and retries, with no second consent.
if (connected && provider.saved?.refresh_token) {
	const before = provider.saved;
	provider.saved = { ...before, access_token: `${before.access_token}x` };
	try {
		const res = await connected.callTool({ name: 'project_overview', arguments: { project } });
		const now = provider.saved;
		step('refresh after a 401', res.structuredContent?.success === true && provider.redirects === 1 &&
			now.refresh_token !== before.refresh_token && now.access_token !== before.access_token,
			`consents ${provider.redirects}, refresh token ${now.refresh_token !== before.refresh_token ? 'rotated' : 'unchanged'}`);
	} catch (e) {
		step('refresh after a 401', false, `${e.name}: ${short(e.message)}`);
	}
}

// 6. Revocation (RFC 7009): the revoked access token is answered 401.
if (provider.saved?.access_token && provider.info?.client_id) {
	const tok = provider.saved.access_token;
	const rev = await fetch(`${base}/oauth/revoke`, {
		method: 'POST',
		headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
		body: new URLSearchParams({ token: tok, client_id: provider.info.client_id }).toString(),
	});
	const res = await fetch(url, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${tok}` },
		body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
	});
	step('revoked access token -> 401', rev.status === 200 && res.status === 401, `revoke HTTP ${rev.status}, then HTTP ${res.status}`);
}
await connected?.close().catch(() => {});

console.log(`${client}: ${steps.length} steps, ${problems.length} problems`);
for (const p of problems) console.log(`  ✗ ${p}`);
process.exit(problems.length ? 1 : 0);
