# Switchboard on one server, in a container (docs/deploy.md, "One server in production").
# Debian-based, with the embedded speech engines' Debian packages; runs as a non-root user;
# DATA_DIR is the volume /data (the SQLite store, recordings, generated keys: back it up).
#
#   docker build -t switchboard .
#   docker run -d --name switchboard -p 127.0.0.1:8080:8080 -v switchboard-data:/data \
#     -e PUBLIC_BASE_URL=https://voice.example.com switchboard
FROM debian:bookworm-slim

# npm runs on Debian's Node; `npm ci` installs the pinned Node 24 binary from the npm registry
# (package "node"), which runs the server. pocketsphinx: embedded recognition (its model is in
# pocketsphinx-en-us). ca-certificates: TLS to hosted providers and webhook receivers.
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm pocketsphinx pocketsphinx-en-us ca-certificates \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --system --create-home --home-dir /home/switchboard switchboard \
 && mkdir -p /app /data && chown switchboard:switchboard /app /data
WORKDIR /app
USER switchboard

COPY --chown=switchboard:switchboard package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY --chown=switchboard:switchboard . .
# The dashboard and demo bundles, built once into the image (npm start would build them at each start).
RUN node_modules/.bin/node scripts/build-web.ts

ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data LOG_FORMAT=json ENV_FILE=
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/app/node_modules/.bin/node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM ends the calls in progress within SHUTDOWN_TIMEOUT_MS (docker stop waits 10 s unless told: --stop-timeout).
CMD ["/app/node_modules/.bin/node", "src/main.ts"]
