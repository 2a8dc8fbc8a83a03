// A real OpenID Provider for LabGPU's SSO tests: panva's certified oidc-provider, on loopback.
//
//   OP_PORT=9123 OP_CONFIG='{"clients":[…],"accounts":{"dana":{…claims}}}' node op.mjs
//
// Sign-in and consent are the library's devInteractions pages (any password is accepted; the
// login names the account in OP_CONFIG.accounts). PKCE is required of every client, so a client
// that does not send a code_verifier is refused at the token endpoint. Prints "OP ready <issuer>".
//
// Hostile settings for LabGPU's security tests (issue 22): accounts' claims may be anything JSON
// holds (a NUL, a plain-string groups claim); OP_CONFIG.signingKeys (default 1) RS256 keys are
// published, and with OP_CONFIG.omitKid the OP issues ID tokens whose header has no `kid`
// (re-signed by the OP with its own first key, which OIDC Core §10.1 allows when the JWKS leaves
// no doubt).
import Provider from 'oidc-provider';
import { CompactSign, decodeJwt, exportJWK, generateKeyPair } from 'jose';

const port = Number(process.env.OP_PORT);
const config = JSON.parse(process.env.OP_CONFIG);
const issuer = `http://127.0.0.1:${port}`;

const signingKeys = [];
for (let i = 0; i < (config.signingKeys ?? 1); i += 1) {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  signingKeys.push({ privateKey, jwk: { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig' } });
}

const provider = new Provider(issuer, {
  jwks: { keys: signingKeys.map((key) => key.jwk) },
  clients: config.clients,
  async findAccount(ctx, sub) {
    const claims = config.accounts[sub];
    if (!claims) return undefined;
    return { accountId: sub, claims: async () => ({ sub, ...claims }) };
  },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['preferred_username', 'name', 'given_name', 'family_name', 'zoneinfo', 'locale'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  pkce: { required: () => true },
  cookies: { keys: ['labgpu-test-op-only'] },
  ttl: { IdToken: config.idTokenTtl ?? 3600 },
});

if (config.omitKid) {
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path === '/token' && ctx.body && ctx.body.id_token) {
      const payload = decodeJwt(ctx.body.id_token);
      ctx.body.id_token = await new CompactSign(Buffer.from(JSON.stringify(payload)))
        .setProtectedHeader({ alg: 'RS256' })
        .sign(signingKeys[0].privateKey);
    }
  });
}

provider.listen(port, '127.0.0.1', () => {
  console.log(`OP ready ${issuer}`);
});
