import { fileURLToPath, URL } from 'node:url'

import { defineConfig } from 'vite'
import vue from '@vitejs/plugin-vue'

// The Django dev server; `make dev` runs it beside Vite.
const backend = process.env.LABGPU_BACKEND_URL ?? 'http://127.0.0.1:8000'

export default defineConfig({
  base: '/',
  plugins: [vue()],
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
    // The calendar (svelte runtime inside) and ECharts are large but only ever loaded lazily.
    chunkSizeWarningLimit: 1200,
  },
})
