// EdDSA (Ed25519) heartbeat triggers for a worker configured with LID_HEARTBEAT_PUBLIC_KEY
// (or `lid serve --heartbeat-public-key FILE`), with Node's crypto only:
//   node scripts/eddsa-trigger.mjs keygen [SEED]      prints `SEED X`: the private seed and
//                                                     the public key (the JWK `x`), base64url
//   node scripts/eddsa-trigger.mjs sign SEED CLAIMS   prints the JWT (CLAIMS: a JSON object
//                                                     with sub, wake_reason, heartbeat_id, exp)
// A control plane signs the same way: header {"alg":"EdDSA","typ":"JWT"}, Ed25519 over
// `base64url(header).base64url(claims)`.
import { createPrivateKey, createPublicKey, randomBytes, sign } from 'node:crypto';

const b64 = (b) => Buffer.from(b).toString('base64url');
// PKCS#8 DER prefix of an Ed25519 private key; the 32-byte seed follows.
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const privateKey = (seed) => {
  const s = Buffer.from(seed, 'base64url');
  if (s.length !== 32) throw new Error(`the seed must be 32 bytes base64url, got ${s.length}`);
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, s]), format: 'der', type: 'pkcs8' });
};
const publicX = (key) => createPublicKey(key).export({ format: 'jwk' }).x;

const [cmd, a, b] = process.argv.slice(2);
if (cmd === 'keygen') {
  const seed = a ?? b64(randomBytes(32));
  console.log(`${seed} ${publicX(privateKey(seed))}`);
} else if (cmd === 'sign' && a && b) {
  const signed = `${b64(JSON.stringify({ alg: 'EdDSA', typ: 'JWT' }))}.${b64(JSON.stringify(JSON.parse(b)))}`;
  console.log(`${signed}.${b64(sign(null, Buffer.from(signed), privateKey(a)))}`);
} else {
  console.error('usage: node scripts/eddsa-trigger.mjs keygen [SEED] | sign SEED CLAIMS_JSON');
  process.exit(2);
}
