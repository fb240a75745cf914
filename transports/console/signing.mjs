// Signed decisions from the console: a P-256 key made and held by this browser.
//
// The private key is made non-extractable by WebCrypto and kept in IndexedDB (by origin and
// principal): no script, this page's included, can read it out; it can only sign. Its public
// half is registered once with the host (POST keys), which then checks every decision this
// browser signs against it. What is signed is what the host checks (agui_core.runtime.signatures):
// the canonical JSON (keys sorted, no spaces) of {interruptId, payload, status, threadId}, as a
// JWS with a detached, unencoded payload (RFC 7515 appendix F, RFC 7797), ES256, its header
// naming the key.

const DATABASE = "agui-console";
const STORE = "keys";
export const SIGNATURE_KEY = "ag-ui:signature";

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DATABASE, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function inStore(mode, act) {
  const database = await open();
  try {
    return await new Promise((resolve, reject) => {
      const transaction = database.transaction(STORE, mode);
      const request = act(transaction.objectStore(STORE));
      transaction.oncomplete = () => resolve(request.result);
      transaction.onerror = transaction.onabort = () => reject(transaction.error);
    });
  } finally {
    database.close();
  }
}

const slot = (principal) => `${location.origin} ${principal}`;

// The key this browser holds for `principal`: {kid, privateKey, publicJwk}, or null.
export async function heldKey(principal) {
  return (await inStore("readonly", (store) => store.get(slot(principal)))) ?? null;
}

// A new key for `principal`, not yet kept.
export async function newKey(principal) {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
  const jwk = await crypto.subtle.exportKey("jwk", pair.publicKey);
  const kid = `console-${crypto.randomUUID()}`;
  const publicJwk = { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, kid, alg: "ES256", use: "sig" };
  return { kid, privateKey: pair.privateKey, publicJwk, principal };
}

export async function keep(principal, held) {
  await inStore("readwrite", (store) => store.put(held, slot(principal)));
}

export async function forget(principal) {
  await inStore("readwrite", (store) => store.delete(slot(principal)));
}

// JSON with object keys sorted at every level and no spaces: what the host signs and checks.
// It matches Python's orjson (OPT_SORT_KEYS) on what a decision holds, with two known
// exceptions, neither of which a console form produces: whole numbers of 1e20 or more
// (JavaScript writes them out in digits, Python reads them back as floats in exponent form) and
// object keys beyond U+FFFF (sorted by UTF-16 units here, by code points there).
export function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function base64url(bytes) {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

const utf8 = (text) => new TextEncoder().encode(text);

// The signature of one resume entry's decision on `threadId`, for its metadata.
export async function sign(held, threadId, entry) {
  const content = canonical({ interruptId: entry.interruptId, payload: entry.payload ?? null, status: entry.status, threadId });
  // The payload unencoded (RFC 7797: "b64": false, a critical header) and left out of the token.
  const header = base64url(utf8(JSON.stringify({ alg: "ES256", b64: false, crit: ["b64"], kid: held.kid })));
  const signed = utf8(`${header}.${content}`);
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, held.privateKey, signed);
  return `${header}..${base64url(new Uint8Array(signature))}`;
}
