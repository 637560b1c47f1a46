# The lockwarden worker image of docker-compose.yml, built as a user installs lockwarden: the npm
# package (dist/ only) with its production dependencies and the lock-service drivers, on Node's
# Active LTS, run as the unprivileged `node` user. Compilers stay in the build stages.
ARG NODE_IMAGE=node:24-bookworm-slim

# 1. The package, exactly as `npm pack` makes it for the registry (prepack builds dist/).
FROM ${NODE_IMAGE} AS pack
WORKDIR /src
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /tmp && mv /tmp/lockwarden-*.tgz /tmp/lockwarden.tgz

# 2. Installed as a user's project installs it: production dependencies only, and the drivers the
# lock services need (optional peers; the versions package.json tests against).
FROM ${NODE_IMAGE} AS install
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY --from=pack /tmp/lockwarden.tgz /tmp/lockwarden.tgz
RUN npm init -y >/dev/null && \
    npm install --omit=dev --no-audit --no-fund /tmp/lockwarden.tgz etcd3@1.1.2 pg@8.23.1 redis@6.3.1

# 3. What runs: node_modules and nothing else, as a non-root user.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=install /app/node_modules ./node_modules
RUN mkdir -p /var/lib/lockwarden && chown node /var/lib/lockwarden
USER node
CMD ["node", "node_modules/lockwarden/dist/worker/main.js"]
