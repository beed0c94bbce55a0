# syntax=docker/dockerfile:1
# The service's container, built as docs/operations.md ("Build and deploy") builds it
# without Docker: a build stage with every dependency makes dist/ (self-contained:
# compiled code, migrations, dashboard and portal assets); the image has dist/ and the
# production dependencies alone. It needs DATABASE_URL and SECRETS_KEY (the embedded
# Postgres is left out: `--omit=optional`).
#
#   docker build -t callback-dispatch .
#   docker run --rm -p 3000:3000 -e DATABASE_URL=postgresql://… -e SECRETS_KEY=… \
#     -e METRICS_TOKEN=… callback-dispatch

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
COPY prisma ./prisma
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# Every interface: 127.0.0.1 (the default) is unreachable from outside the container.
ENV HOST=0.0.0.0
ENV PORT=3000
COPY package.json package-lock.json ./
# No scripts/ here, so the project's postinstall (Prisma client generation) does nothing:
# the client is compiled into dist/.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
# Ready: the database answers, every migration is applied, the worker claims.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/health/ready`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself is PID 1 and handles SIGTERM (drain, write back, exit 0): not `npm start`,
# whose shell would not pass the signal on. Give `docker stop` more than
# SHUTDOWN_GRACE_MS (10 s): `docker stop -t 30`, or `stop_grace_period: 30s` in compose.
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]
