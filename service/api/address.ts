// Where `npx iwibench service` listens unless told otherwise, and where its clients look for it unless
// IWIBENCH_SERVICE_URL says: one definition for both sides.
export const DEFAULT_SERVICE_HOST = '127.0.0.1';
export const DEFAULT_SERVICE_PORT = 8768;
export const DEFAULT_SERVICE_URL = `http://${DEFAULT_SERVICE_HOST}:${DEFAULT_SERVICE_PORT}`;
