import { describe, expect, it } from 'vitest';
import { AppConfig, ConfigError, loadConfig } from './app.config.js';

describe(AppConfig.name, () => {
  it('should use the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 3000, host: '127.0.0.1', role: 'all', dispatchConcurrency: 200, hostMaxInFlight: 20, httpTimeoutMs: 15000 });
    expect(c.databaseUrl).toBeUndefined();
  });

  it('should read and convert variables', () => {
    const c = loadConfig({ PORT: '8080', ROLE: 'worker', ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8, 10.0.0.0/8', RETRY_DELAYS_MS: '10,20' });
    expect(c).toMatchObject({ port: 8080, role: 'worker', allowPrivateNetworks: ['127.0.0.0/8', '10.0.0.0/8'], retryDelaysMs: [10, 20] });
  });

  it('should take a fractional RETENTION_HOURS and purge a short window a tenth of it apart, unless the interval is set', () => {
    expect(loadConfig({})).toMatchObject({ retentionHours: 720, retentionPurgeIntervalMs: 600_000 });
    expect(loadConfig({ RETENTION_HOURS: '0.05' })).toMatchObject({ retentionHours: 0.05, retentionPurgeIntervalMs: 18_000 });
    expect(loadConfig({ RETENTION_HOURS: '0.0001' }).retentionPurgeIntervalMs).toBe(1_000);
    expect(loadConfig({ RETENTION_HOURS: '0.05', RETENTION_PURGE_INTERVAL_MS: '60000' }).retentionPurgeIntervalMs).toBe(60_000);
    expect(loadConfig({ RETENTION_HOURS: '0' }).retentionPurgeIntervalMs).toBe(600_000);
    expect(() => loadConfig({ RETENTION_HOURS: '-1' })).toThrow(/RETENTION_HOURS="-1"/);
    expect(() => loadConfig({ RETENTION_HOURS: '1h' })).toThrow(/RETENTION_HOURS="1h"/);
  });

  it('should take TRUSTED_PROXIES as a list of CIDRs and refuse an entry that is not one, naming the variable', () => {
    expect(loadConfig({}).trustedProxies).toEqual([]);
    expect(loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1,fd00::/8' }).trustedProxies).toEqual(['10.0.0.0/8', '127.0.0.1', 'fd00::/8']);
    expect(() => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8,loopback' })).toThrow(/TRUSTED_PROXIES="10.0.0.0\/8,loopback".*"loopback" is not an IP address/);
  });

  it('should list every bad variable at once', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', ROLE: 'boss', DISPATCH_CONCURRENCY: '0' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('PORT="eighty"');
    expect(message).toContain('ROLE="boss"');
    expect(message).toContain('DISPATCH_CONCURRENCY="0"');
  });

  it('should take an http or https EGRESS_PROXY_URL and refuse other schemes naming the variable', () => {
    expect(loadConfig({ EGRESS_PROXY_URL: 'http://u:p@10.1.2.3:3128' }).egressProxyUrl).toBe('http://u:p@10.1.2.3:3128');
    expect(loadConfig({ EGRESS_PROXY_URL: 'https://proxy.internal/' }).egressProxyUrl).toBe('https://proxy.internal/');
    for (const bad of ['socks5://127.0.0.1:1080', 'proxy:3128', 'http://proxy:3128/path']) {
      expect(() => loadConfig({ EGRESS_PROXY_URL: bad }), bad).toThrow(/EGRESS_PROXY_URL=.*socks5 is not supported/);
    }
  });
});
