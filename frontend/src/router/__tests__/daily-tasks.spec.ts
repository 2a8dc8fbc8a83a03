// docs/operations.md's "Daily tasks and their screens" against the router (issue 24 acceptance 3):
// every task's route is a page of the SPA (not the catch-all), the role may open it, and no task
// sends anyone to Django's /admin/.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'
import { createMemoryHistory, createRouter } from 'vue-router'

import { routes } from '../routes'

const ROLES = ['researcher', 'lab_admin', 'site_admin'] as const
type Role = (typeof ROLES)[number]

function dailyTasks(): { role: string; task: string; route: string }[] {
  const doc = readFileSync(join(__dirname, '..', '..', '..', '..', 'docs', 'operations.md'), 'utf8')
  const section = doc.split('## Daily tasks and their screens')[1]?.split('\n## ')[0] ?? ''
  return section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| Role') && !line.startsWith('| ---'))
    .map((line) => {
      const [role = '', task = '', route = ''] = line.split('|').slice(1, -1).map((cell) => cell.trim())
      return { role, task, route: route.replace(/`/g, '') }
    })
}

// Who may open a page (RouteMeta.role): 'admin' is a lab admin or a site admin.
function allowed(role: Role, needed: string | undefined): boolean {
  if (!needed) return true
  if (role === 'site_admin') return true
  return role === 'lab_admin' && needed === 'admin'
}

describe("the daily tasks' screens (docs/operations.md)", () => {
  const tasks = dailyTasks()
  const router = createRouter({ history: createMemoryHistory(), routes })

  it('lists tasks for every role', () => {
    for (const role of ROLES) expect(tasks.filter((t) => t.role === role).length, role).toBeGreaterThan(2)
    expect(tasks.map((t) => t.role).filter((r) => !(ROLES as readonly string[]).includes(r))).toEqual([])
  })

  it.each(dailyTasks())('$role: $task → $route', ({ role, route }) => {
    expect(route.startsWith('/admin')).toBe(false)
    const resolved = router.resolve(route)
    expect(resolved.name, `${route} is no page of the SPA`).not.toBe('not-found')
    expect(allowed(role as Role, resolved.meta.role), `${role} may not open ${route}`).toBe(true)
  })
})
