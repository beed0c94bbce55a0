import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface OAuth2Client {
  clientId: string;
  clientSecret: string;
  /** client_secret_basic (default) or client_secret_post. */
  method?: 'client_secret_basic' | 'client_secret_post';
}

/**
 * A real OAuth2 authorization server (oidc-provider) on 127.0.0.x with the client
 * credentials grant, token introspection and revocation, and a count of the tokens it
 * issued. `down()` stops it listening (connections refused) until `up()`.
 */
export class AuthorizationServer {
  /** Tokens issued (answered POSTs to /token). */
  issued = 0;
  /** The lifetime (expires_in) of the tokens it issues from now on: a test may shorten it for a token it wants out of date soon. */
  tokenTtlSeconds = 0;
  url = '';
  private server?: http.Server;
  private port = 0;

  private constructor(
    private readonly host: string,
    readonly provider: Provider,
  ) {}

  static async start(options: { host: string; clients: OAuth2Client[]; tokenTtlSeconds: number }): Promise<AuthorizationServer> {
    const provider = new Provider(`http://${options.host}`, {
      clients: [
        ...options.clients.map((c) => ({
          client_id: c.clientId,
          client_secret: c.clientSecret,
          grant_types: ['client_credentials'],
          redirect_uris: [],
          response_types: [],
          token_endpoint_auth_method: c.method ?? 'client_secret_basic',
          scope: 'callbacks',
        })),
        // the resource server's own client, for introspection
        { client_id: RESOURCE_CLIENT, client_secret: RESOURCE_SECRET, grant_types: [], redirect_uris: [], response_types: [] },
      ],
      features: { clientCredentials: { enabled: true }, introspection: { enabled: true }, revocation: { enabled: true }, devInteractions: { enabled: false } },
      scopes: ['callbacks'],
      // read at each issue: `tokenTtlSeconds` may change between tokens
      ttl: { ClientCredentials: () => as.tokenTtlSeconds },
    });
    const as: AuthorizationServer = new AuthorizationServer(options.host, provider);
    as.tokenTtlSeconds = options.tokenTtlSeconds;
    await as.up();
    return as;
  }

  get tokenUrl(): string {
    return `${this.url}/token`;
  }

  async up(): Promise<void> {
    const handle = this.provider.callback();
    this.server = http.createServer((req, res) => {
      if (req.method === 'POST' && req.url === '/token') res.on('finish', () => res.statusCode === 200 && this.issued++);
      handle(req, res);
    });
    await new Promise<void>((r) => this.server!.listen(this.port, this.host, r));
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://${this.host}:${this.port}`;
  }

  async down(): Promise<void> {
    const s = this.server!;
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }

  /** Revokes `token` as its client would (RFC 7009). */
  async revoke(token: string, client: OAuth2Client): Promise<void> {
    const res = await fetch(`${this.url}/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client.clientId, client.clientSecret) },
      body: new URLSearchParams({ token }).toString(),
    });
    if (res.status !== 200) throw new Error(`revocation answered ${res.status}`);
  }

  /** Whether the server still takes `token` (RFC 7662 introspection, as the resource server asks). */
  async active(token: string): Promise<boolean> {
    const res = await fetch(`${this.url}/token/introspection`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(RESOURCE_CLIENT, RESOURCE_SECRET) },
      body: new URLSearchParams({ token }).toString(),
    });
    return ((await res.json()) as { active: boolean }).active === true;
  }

  async close(): Promise<void> {
    if (this.server?.listening) await this.down();
  }
}

const RESOURCE_CLIENT = 'resource-server';
const RESOURCE_SECRET = 'resource-server-secret-0123456789';
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

export interface ResourceRequest {
  url: string;
  token: string | null;
  status: number;
  webhookId: string | undefined;
}

/** A receiver that takes a call only with a bearer token its authorization server says is active (introspection per request), else 401. */
export class ResourceServer {
  readonly requests: ResourceRequest[] = [];
  url = '';
  private readonly server: http.Server;

  private constructor(as: AuthorizationServer) {
    this.server = http.createServer(async (req, res) => {
      const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? null;
      req.resume();
      const status = token && (await as.active(token)) ? 200 : 401;
      this.requests.push({ url: req.url ?? '', token, status, webhookId: req.headers['webhook-id'] as string | undefined });
      res.writeHead(status, status === 401 ? { 'www-authenticate': 'Bearer error="invalid_token"' } : {}).end(status === 200 ? 'ok' : 'invalid token');
    });
  }

  static async start(host: string, as: AuthorizationServer): Promise<ResourceServer> {
    const rs = new ResourceServer(as);
    await new Promise<void>((r) => rs.server.listen(0, host, r));
    rs.url = `http://${host}:${(rs.server.address() as AddressInfo).port}`;
    return rs;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
