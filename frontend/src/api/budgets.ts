import { api, fetchAllPages, MAX_PAGE_SIZE, unwrap } from './client'
import type { Budget, BudgetCreate, BudgetUpdate, CostCentre } from './types'

const page_size = MAX_PAGE_SIZE

/** Budgets of a lab (or all I may see) with the consumed, forecast and committed cost of their
 * period containing `at` (ISO 8601 with an offset: a booking's start), default the current one. */
export function listBudgets(filters: { lab?: number; at?: string } = {}): Promise<Budget[]> {
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/budgets/', { params: { query: { ...filters, page, page_size } } })),
  )
}

export function createBudget(input: BudgetCreate): Promise<Budget> {
  return unwrap(api.POST('/api/v1/budgets/', { body: input }))
}

export function updateBudget(id: number, input: BudgetUpdate): Promise<Budget> {
  return unwrap(api.PATCH('/api/v1/budgets/{id}/', { params: { path: { id } }, body: input }))
}

export async function deleteBudget(id: number): Promise<void> {
  await unwrap(api.DELETE('/api/v1/budgets/{id}/', { params: { path: { id } } }))
}

export function listCostCentres(filters: { lab?: number; is_active?: boolean } = {}): Promise<CostCentre[]> {
  return fetchAllPages((page) =>
    unwrap(api.GET('/api/v1/cost-centres/', { params: { query: { ...filters, page, page_size } } })),
  )
}

export function createCostCentre(input: { lab: number; code: string; name: string }): Promise<CostCentre> {
  return unwrap(api.POST('/api/v1/cost-centres/', { body: input }))
}

export function updateCostCentre(id: number, input: { name?: string; is_active?: boolean }): Promise<CostCentre> {
  return unwrap(api.PATCH('/api/v1/cost-centres/{id}/', { params: { path: { id } }, body: input }))
}

/** The cost centre a member's bookings carry unless they name another (null: none). */
export function setDefaultCostCentre(input: { lab: number; user: number; cost_centre: number | null }) {
  return unwrap(api.POST('/api/v1/cost-centre-defaults/', { body: input }))
}
