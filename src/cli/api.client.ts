/** An API answer that was not 2xx, with the service's stable error code. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** The few calls the CLI makes, over fetch, with the key as a Bearer token. */
export class ApiClient {
  constructor(private readonly baseUrl: string, private readonly key: string | undefined) {}

  get<T>(path: string, accept = 'application/json'): Promise<T> {
    return this.request<T>('GET', path, undefined, accept);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('POST', path, body);
  }

  put<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PUT', path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.request<T>('DELETE', path);
  }

  private async request<T>(method: string, path: string, body?: unknown, accept = 'application/json'): Promise<T> {
    const headers: Record<string, string> = { accept };
    if (this.key) headers.authorization = `Bearer ${this.key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (error) {
      const { cause } = error as { cause?: { code?: string; message?: string } };
      const reason = cause?.code ?? cause?.message ?? (error as Error).message;
      throw new ApiError(0, 'unreachable', `cannot reach ${this.baseUrl} (${reason}); is the service running? (--url / CALLBACKS_URL)`);
    }
    const text = await res.text();
    if (!res.ok) {
      let parsed: { code?: string; message?: string } = {};
      try { parsed = JSON.parse(text); } catch { /* not JSON: keep the status line */ }
      const hint = res.status === 401 && !this.key ? ' (pass --key or set CALLBACKS_API_KEY)' : '';
      throw new ApiError(res.status, parsed.code ?? 'http_error', `${parsed.message ?? `HTTP ${res.status}`}${hint}`);
    }
    return (accept === 'application/json' ? JSON.parse(text) : text) as T;
  }
}
