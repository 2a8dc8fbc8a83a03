// A real OpenID Provider for LabGPU's SSO tests: panva's certified oidc-provider, on loopback.
//
//   OP_PORT=9123 OP_CONFIG='{"clients":[…],"accounts":{"dana":{…claims}}}' node op.mjs
//
// Sign-in and consent are the library's devInteractions pages (any password is accepted; the
// login names the account in OP_CONFIG.accounts). PKCE is required of every client, so a client
// that does not send a code_verifier is refused at the token endpoint. Prints "OP ready <issuer>".
import Provider from 'oidc-provider';

const port = Number(process.env.OP_PORT);
const config = JSON.parse(process.env.OP_CONFIG);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
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

provider.listen(port, '127.0.0.1', () => {
  console.log(`OP ready ${issuer}`);
});
