# syntax=docker/dockerfile:1
#
# The one Paddock image. It serves every Procfile role; the command picks the role:
#
#   web             node api/main.ts          (the default)
#   worker          node workers/main.ts
#   release         node migrations/run.ts
#   egress-gateway  node workers/egress-gateway.ts   (Kubernetes only)
#
# Node 24 runs the TypeScript sources as they are (type stripping), so there is no compile step:
# the image holds the .ts sources of the server roles and the production dependencies, nothing
# else (no tests, no CLI, no dev tools). Build it from the repository root:
#
#   docker build -t registry.example.com/paddock:0.1.0 .
#
# docs/deploy.md says how to run it; test/deploy/image.test.ts checks this file.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- production dependencies ------------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# Exactly the locked versions, and only the production ones: the `node` devDependency (a second
# Node binary, for development), TypeScript, ESLint and the test tools stay out of the image.
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# ---- runtime ------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app

# Nothing in the image runs a package manager: remove npm, npx, corepack and yarn (less to patch,
# less for an intruder to use), and add the unprivileged user the processes run as. The egress
# gateway signs brokered hosts' certificates with openssl, and hands sandboxes the public
# authorities of ca-certificates with its own.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates openssl \
 && rm -rf /var/lib/apt/lists/* \
 && rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx \
      /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* \
 && groupadd --system --gid 10001 paddock \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin paddock

# Owned by root and read-only to the process: the code cannot be changed by what it runs.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json Procfile ./
COPY shared ./shared
COPY migrations ./migrations
COPY workers ./workers
COPY api ./api
# The one operator tool: moving stored secrets to a rotated key (docs/deploy.md).
COPY scripts/reencrypt-secrets.ts ./scripts/reencrypt-secrets.ts

USER 10001:10001

# 3000: the web role's HTTP API (PORT). 9091: the worker role's /metrics and /healthz
# (PADDOCK_WORKER_METRICS_PORT). A bare worker picks any free port; a container has its own
# network, so here the port is fixed for probes and scrapers to find, on every interface of it
# (a bare worker binds loopback); with PADDOCK_METRICS_TOKEN set, /metrics wants the token.
ENV PADDOCK_WORKER_METRICS_PORT=9091 PADDOCK_WORKER_METRICS_HOST=0.0.0.0
EXPOSE 3000 9091

# Healthy when this container's role answers /healthz: the API on PORT, or a worker on
# PADDOCK_WORKER_METRICS_PORT, set above (curl is not in the image; Node's fetch is). Kubernetes ignores
# HEALTHCHECK and uses the probes in deploy/kubernetes; this is for Docker and Compose.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const get = (p) => fetch(`http://127.0.0.1:${p}/healthz`, { signal: AbortSignal.timeout(4000) }).then((r) => { if (!r.ok) throw new Error(String(r.status)); }); Promise.any([get(process.env.PORT || 3000), get(process.env.PADDOCK_WORKER_METRICS_PORT)]).then(() => process.exit(0), () => process.exit(1));"]

CMD ["node", "api/main.ts"]
