# The lockwarden worker image used by docker-compose.yml.
FROM node:20-bookworm-slim
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN mkdir -p /var/lib/lockwarden && chown node /var/lib/lockwarden
USER node
CMD ["npx", "tsx", "worker/main.ts"]
