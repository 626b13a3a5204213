// sigstore-js (the `sigstore` npm package's signing and verifying libraries) on aiod's bundles,
// offline: no Fulcio, no Rekor, no TUF; a public key is the only trust material.
//
//   node sigstore-js.cjs verify BUNDLE ARTIFACT PUBLIC.pem   prints "verified" or fails
//   node sigstore-js.cjs sign ARTIFACT PRIVATE.pem PUBLIC.pem    prints a message-signature bundle
//   node sigstore-js.cjs attest DIGEST PRIVATE.pem PUBLIC.pem    prints a DSSE bundle of an in-toto
//                                                                statement whose subject is DIGEST
//
// NODE_PATH names the pinned Node tools' node_modules (host/e2e/testdata/install.sh).
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const { bundleFromJSON, bundleToJSON } = require('@sigstore/bundle');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');
const { MessageSignatureBundleBuilder, DSSEBundleBuilder } = require('@sigstore/sign');

const [mode, a, b, c] = process.argv.slice(2);

function hintOf(pubPEM) {
  const der = crypto.createPublicKey(pubPEM).export({ type: 'spki', format: 'der' });
  return crypto.createHash('sha256').update(der).digest('base64');
}

function signer(privPEM, pubPEM) {
  const key = crypto.createPrivateKey(privPEM);
  return {
    async sign(data) {
      return {
        signature: crypto.sign('sha256', data, key),
        key: { $case: 'publicKey', publicKey: pubPEM, hint: hintOf(pubPEM) },
      };
    },
  };
}

async function main() {
  switch (mode) {
    case 'verify': {
      const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(a, 'utf8')));
      const pubPEM = fs.readFileSync(c, 'utf8');
      const der = crypto.createPublicKey(pubPEM).export({ type: 'spki', format: 'der' });
      const root = { mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
        tlogs: [], certificateAuthorities: [], ctlogs: [], timestampAuthorities: [] };
      const hint = bundle.verificationMaterial.content.publicKey.hint;
      const trust = toTrustMaterial(root, { [hint]: { rawBytes: der } });
      const verifier = new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
      verifier.verify(toSignedEntity(bundle, fs.readFileSync(b)));
      process.stdout.write('verified\n');
      return;
    }
    case 'sign': {
      const builder = new MessageSignatureBundleBuilder({ signer: signer(fs.readFileSync(b, 'utf8'), fs.readFileSync(c, 'utf8')), witnesses: [] });
      const bundle = await builder.create({ data: fs.readFileSync(a) });
      process.stdout.write(JSON.stringify(bundleToJSON(bundle)));
      return;
    }
    case 'attest': {
      const statement = {
        _type: 'https://in-toto.io/Statement/v1',
        subject: [{ name: 'aiod-plugin', digest: { sha256: a.replace(/^sha256:/, '') } }],
        predicateType: 'https://sigstore.dev/cosign/sign/v1',
        predicate: {},
      };
      const builder = new DSSEBundleBuilder({ signer: signer(fs.readFileSync(b, 'utf8'), fs.readFileSync(c, 'utf8')), witnesses: [] });
      const bundle = await builder.create({ data: Buffer.from(JSON.stringify(statement)), type: 'application/vnd.in-toto+json' });
      process.stdout.write(JSON.stringify(bundleToJSON(bundle)));
      return;
    }
    default:
      process.stderr.write('usage: sigstore-js.cjs verify|sign|attest ...\n');
      process.exit(2);
  }
}

main().catch((e) => {
  process.stderr.write(`sigstore-js: ${e && e.code ? e.code + ': ' : ''}${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
