/** The HTTP methods a callback is sent with (a batch's or a transform's). */
export const METHODS = ['POST', 'PUT', 'PATCH', 'DELETE', 'GET'] as const;
