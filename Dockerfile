# Production image. CI here runs Node 20 (the machine's), but Node 20 left LTS in April 2026:
# images build on Node 24.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The client package is an npm workspace: npm ci needs its package.json.
COPY src/client/package.json ./src/client/
# Upstream fixes carried until released (patch-package, on install; see scripts/patches/).
COPY scripts/patches ./scripts/patches
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY openapi ./openapi
COPY generated ./generated
COPY src ./src
COPY scripts ./scripts
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000
# Same heap limits as `npm start`: they keep the memory of a busy process bounded (bench/README.md measures it).
ENV NODE_OPTIONS="--max-old-space-size=256 --max-semi-space-size=16"
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/openapi ./openapi
# The console's templates and its CSS and script are read from the source tree (src/console/views.ts).
COPY --from=build /app/src/console/views ./src/console/views
COPY --from=build /app/src/console/static ./src/console/static
USER node
EXPOSE 3000 9464
CMD ["node", "dist/src/main.js"]
