# agentplane in a container: the commands are docs/operations.md's ("In a container").
#   docker build -t agentplane .
#   docker run --init -p 2024:2024 -v agentplane-data:/data agentplane
# Without DATABASE_URL the server runs its embedded Postgres under /data; set DATABASE_URL to use
# your own. `--init` reaps the processes a PID 1 would have to; SIGTERM (docker stop) reaches the
# server through npm, which stops it and its Postgres gracefully.
FROM node:20-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production \
    AGENTPLANE_HOST=0.0.0.0 \
    AGENTPLANE_DATA_DIR=/data

# Dependencies first, so that a code change does not reinstall them. The SDK is a workspace.
COPY package.json package-lock.json ./
COPY sdk/package.json sdk/
# The postinstall step repairs the postgres.js driver (see the script); start-up checks it did.
COPY server/patches/postgres-driver-repair.mjs server/patches/
RUN npm ci --omit=dev && npm cache clean --force

COPY . .
# Embedded Postgres refuses to run as root: the image's unprivileged `node` user owns the data.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 2024

# /ok answers 200 while Postgres and the queue are up, 503 while they are not.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:2024/ok').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

CMD ["npm", "start"]
