import { HttpService } from '@nestjs/axios';
import { AxiosHeaders } from 'axios';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { firstValueFrom } from 'rxjs';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchAxios } from './dispatch.axios.js';
import { undiciAdapter } from './undici.adapter.js';

/**
 * The short path of the dispatcher's axios instance, against a real server on
 * loopback: a call shaped as the transport makes it goes straight to the undici
 * adapter (its response headers stay the adapter's plain object, where axios's
 * whole path turns them into AxiosHeaders), and anything axios itself would act on
 * (an interceptor, another option) takes axios's whole path and is honoured.
 */
describe(dispatchAxios.name, () => {
  let server: Server;
  let url: string;
  const seen: { url: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const agent = new Agent();
  const adapter = undiciAdapter(agent);

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', headers: req.headers, body });
        res.writeHead(201, { 'x-answer': 'yes' }).end('done');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await agent.close();
    await new Promise((r) => server.close(r));
  });

  const call = () => ({ url, method: 'post', headers: { 'content-type': 'application/json', 'webhook-id': 'w-1' }, data: '{"a":1}', timeout: 2_000, adapter });

  it('should send a transport-shaped call straight through the adapter, headers exactly as given', async () => {
    const res = await dispatchAxios().request(call());
    expect(res.status).toBe(201);
    expect(res.data).toBe('done');
    expect(res.headers['x-answer']).toBe('yes');
    expect(res.headers).not.toBeInstanceOf(AxiosHeaders);
    const got = seen.at(-1)!;
    expect(got.body).toBe('{"a":1}');
    expect(got.headers['webhook-id']).toBe('w-1');
    expect(got.headers.accept).toBeUndefined();
  });

  it("should take axios's whole path, interceptors included, once one is registered", async () => {
    const instance = dispatchAxios();
    const id = instance.interceptors.request.use((config) => {
      config.headers.set('x-added', 'by-interceptor');
      return config;
    });
    const res = await instance.request(call());
    expect(res.status).toBe(201);
    expect(res.headers).toBeInstanceOf(AxiosHeaders);
    expect(seen.at(-1)!.headers['x-added']).toBe('by-interceptor');
    instance.interceptors.request.eject(id);
    expect((await instance.request(call())).headers).not.toBeInstanceOf(AxiosHeaders); // ejected: short again
  });

  it('should honour an option axios itself acts on (transformRequest) on its whole path', async () => {
    const res = await dispatchAxios().request({ ...call(), transformRequest: [(data: string) => data.toUpperCase()] });
    expect(res.status).toBe(201);
    expect(res.headers).toBeInstanceOf(AxiosHeaders);
    expect(seen.at(-1)!.body).toBe('{"A":1}');
  });

  it("should serve HttpService's Observable API on the whole path (it adds a cancel token)", async () => {
    const res = await firstValueFrom(new HttpService(dispatchAxios()).request(call()));
    expect(res.status).toBe(201);
    expect(res.headers).toBeInstanceOf(AxiosHeaders);
    expect(seen.at(-1)!.headers['webhook-id']).toBe('w-1');
  });
});
