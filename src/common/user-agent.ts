/** The User-Agent of every call the service makes (dispatch), and what the portal shows an attempt was sent with. */
export const USER_AGENT = 'callback-dispatch/0.1';
