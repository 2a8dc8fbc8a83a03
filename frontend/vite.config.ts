import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, URL } from 'node:url'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'

import { defineConfig, type Plugin } from 'vite'
import vue from '@vitejs/plugin-vue'
import VueI18nPlugin from '@intlify/unplugin-vue-i18n/vite'

// The Django dev server; `make dev` runs it beside Vite.
const backend = process.env.LABGPU_BACKEND_URL ?? 'http://127.0.0.1:8000'

/**
 * Writes `<file>.br` and `<file>.gz` beside every text asset of the build. WhiteNoise serves these
 * ready-made variants to clients that accept them; it never compresses at request time, and it
 * does not compress WHITENOISE_ROOT on its own (collectstatic does that only for STATIC_ROOT).
 */
function precompress(): Plugin {
  let outDir = ''
  let publicDir = ''
  return {
    name: 'labgpu-precompress',
    apply: 'build',
    configResolved(config) {
      outDir = config.build.outDir.startsWith('/') ? config.build.outDir : join(config.root, config.build.outDir)
      publicDir = config.publicDir
    },
    writeBundle(_options, bundle) {
      // The bundle's assets, and the files of public/ (copied as they are: intl-warmup.js).
      const files: [string, Buffer][] = Object.entries(bundle).map(([name, chunk]) => [
        name,
        Buffer.from(chunk.type === 'chunk' ? chunk.code : chunk.source),
      ])
      if (publicDir && existsSync(publicDir)) {
        for (const name of readdirSync(publicDir)) files.push([name, readFileSync(join(publicDir, name))])
      }
      for (const [name, body] of files) {
        if (!/\.(js|css|svg|json|txt)$/.test(name)) continue
        if (body.length < 1024) continue
        const br = brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } })
        const gz = gzipSync(body, { level: 9 })
        if (br.length < body.length) writeFileSync(join(outDir, `${name}.br`), br)
        if (gz.length < body.length) writeFileSync(join(outDir, `${name}.gz`), gz)
      }
    },
  }
}

/**
 * The precompiled messages (see VueI18nPlugin below) as `JSON.parse('…')` instead of a 70 KB object
 * literal: V8 scans a string and parses JSON several times faster than it compiles and runs the
 * same data as JavaScript, and the English messages are parsed on every page load before the app
 * runs (docs/benchmarks.md, SPA: compiling the chunk that holds them took ≈40 ms at 4× CPU
 * slowdown). Fails the build if the i18n plugin's output stops being plain data.
 */
function messagesAsJson(): Plugin {
  return {
    name: 'labgpu-messages-as-json',
    apply: 'build',
    enforce: 'post',
    transform(code, id) {
      if (!/\/src\/i18n\/[^/]+\.json$/.test(id)) return null
      const literal = /^const resource = ([\s\S]*)\nexport default resource\s*$/.exec(code)?.[1]
      if (literal === undefined) throw new Error(`${id}: unexpected output of the i18n plugin`)
      const data: unknown = JSON.parse(literal)
      return { code: `export default JSON.parse(${JSON.stringify(JSON.stringify(data))})`, map: null }
    },
  }
}

export default defineConfig({
  base: '/',
  plugins: [
    vue(),
    // The locale messages are compiled here, not in the browser: the app ships vue-i18n's runtime
    // without its message compiler (~10 KB brotli) and never parses a message on the main thread.
    // Not under Vitest: the unit tests read the message files as the plain JSON they are.
    ...(process.env.VITEST
      ? []
      : [
          VueI18nPlugin({
            include: [fileURLToPath(new URL('./src/i18n/*.json', import.meta.url))],
            runtimeOnly: true,
            compositionOnly: true,
            fullInstall: true,
            dropMessageCompiler: true,
          }),
        ]),
    ...(process.env.VITEST ? [] : [messagesAsJson()]),
    precompress(),
  ],
  // vue-i18n's bundler build reads these flags; the Composition API alone keeps it small.
  define: {
    __VUE_I18N_FULL_INSTALL__: true,
    __VUE_I18N_LEGACY_API__: false,
    __INTLIFY_PROD_DEVTOOLS__: false,
  },
  resolve: {
    alias: {
      '@': fileURLToPath(new URL('./src', import.meta.url)),
    },
  },
  server: {
    proxy: {
      '/api': { target: backend, changeOrigin: false },
      '/admin': { target: backend, changeOrigin: false },
      '/static': { target: backend, changeOrigin: false },
    },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // dist/.vite/manifest.json: which chunk and style sheets each page's view is in. The server
    // reads it to preload the first page's code with its HTML (backend/labgpu/core/views.py).
    manifest: true,
    // The calendar (svelte runtime inside) is large but only ever loaded lazily.
    chunkSizeWarningLimit: 1200,
    rolldownOptions: {
      output: {
        codeSplitting: {
          // Only the modules named below, not everything they import.
          includeDependenciesRecursively: false,
          groups: [
            {
              // The dashboard (the first page of most visits) and what it shares with other pages,
              // as one chunk: it was ten chunks of 0.2–3 KB, ten requests queueing for the browser's
              // six connections beside the page's API reads, then still five (the view, the budget
              // bar and its API module, two style sheets) that the first page load fetched and
              // preloaded one by one. Small modules only: nothing large moves.
              name: 'dashboard-shared',
              test: /\/src\/(views\/DashboardView|components\/base\/BasePlainLink|components\/bookings\/(BookingTable|BookingStatusBadge)|components\/(quotas\/QuotaBar|budgets\/BudgetBar)|composables\/(useFormat|useApiError|usePolling)|utils\/booking|api\/(types|budgets))\b/,
            },
          ],
        },
      },
    },
  },
})
