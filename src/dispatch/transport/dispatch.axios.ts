import axios, {
  type AxiosAdapter,
  type AxiosInstance,
  type AxiosInterceptorManager,
  type AxiosRequestConfig,
  type AxiosResponse,
  type InternalAxiosRequestConfig,
} from 'axios';

/**
 * The axios instance behind the dispatcher's HttpService, with what every call shares
 * set once: no redirects, every status a response, bodies untransformed, no default
 * headers (a callback carries exactly its client's headers plus the webhook ones), and
 * none of the defaults only axios's own adapters read (axios deep-copies every default
 * into every call). So axios's own work on a call changes nothing the adapter sees, yet
 * costs a large share of a worker's CPU (bench/README.md, "the dispatcher's axios short
 * path"): `request()` sends a config object of only DIRECT_KEYS whose adapter is marked
 * direct (`directAdapter`), on an instance with no interceptors, straight to its
 * adapter. Any other call (another option, an interceptor, a URL-first call,
 * HttpService's Observable methods) takes axios's whole path.
 */
export function dispatchAxios(): AxiosInstance {
  const instance = axios.create({ maxRedirects: 0, validateStatus: () => true, transformRequest: [], transformResponse: [] });
  instance.defaults.headers = {} as AxiosInstance['defaults']['headers'];
  for (const key of UNUSED_DEFAULTS) delete instance.defaults[key];
  const full = instance.request.bind(instance) as (configOrUrl: unknown, config?: unknown) => Promise<AxiosResponse>;
  const request = (configOrUrl: string | AxiosRequestConfig, config?: AxiosRequestConfig): Promise<AxiosResponse> => {
    if (typeof configOrUrl === 'object' && config === undefined && isDirect(instance, configOrUrl)) {
      return (configOrUrl.adapter as AxiosAdapter)(configOrUrl as InternalAxiosRequestConfig);
    }
    return full(configOrUrl, config);
  };
  instance.request = request as AxiosInstance['request'];
  return instance;
}

/** Instance defaults that only axios's xhr, fetch and http adapters read; every call names its adapter and timeout. */
const UNUSED_DEFAULTS = ['transitional', 'env', 'xsrfCookieName', 'xsrfHeaderName', 'maxContentLength', 'maxBodyLength', 'timeout', 'adapter'] as const;

/** The options a direct call may carry: what the adapter reads, nothing axios itself would act on. */
const DIRECT_KEYS = new Set(['url', 'method', 'headers', 'data', 'timeout', 'adapter', 'snippetBytes']);

const DIRECT = Symbol('direct adapter');

/**
 * Marks an adapter that takes a config as callers write it (headers a plain object of
 * strings or AxiosHeaders, data a string or Buffer, `validateStatus` not consulted:
 * every status resolves), so axios's preparation of the config can be skipped.
 */
export function directAdapter(adapter: AxiosAdapter): AxiosAdapter {
  return Object.assign(adapter, { [DIRECT]: true });
}

function isDirect(instance: AxiosInstance, config: AxiosRequestConfig): boolean {
  const adapter = config.adapter as (AxiosAdapter & { [DIRECT]?: true }) | undefined;
  if (typeof adapter !== 'function' || adapter[DIRECT] !== true) return false;
  if (interceptorCount(instance.interceptors.request) + interceptorCount(instance.interceptors.response) > 0) return false;
  for (const key in config) if (!DIRECT_KEYS.has(key)) return false;
  const data = config.data as unknown;
  return data === undefined || typeof data === 'string' || Buffer.isBuffer(data);
}

/** Handlers still registered (`handlers`, in axios's published types; it leaves null where one was ejected). */
function interceptorCount<V>(manager: AxiosInterceptorManager<V>): number {
  let n = 0;
  for (const h of manager.handlers ?? []) if (h) n++;
  return n;
}
