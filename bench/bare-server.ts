// The HTTP ceiling: a bare Express 5 route, no authentication, no database.
import express from 'express';

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.get('/bare', (_req, res) => {
  res.json({ status: 'ok' });
});
const server = app.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
