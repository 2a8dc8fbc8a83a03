import { computed, shallowRef } from 'vue'

import { listInstanceTypes, listLabs, listPools } from '@/api/catalog'
import type { InstanceType, Lab, Pool } from '@/api/types'

// Pools, instance types and labs change rarely: fetch once per page load and share.
const pools = shallowRef<Pool[]>([])
const instanceTypes = shallowRef<InstanceType[]>([])
const labs = shallowRef<Lab[]>([])
let pending: Promise<void> | null = null

export function resetCatalog(): void {
  pending = null
  pools.value = []
  instanceTypes.value = []
  labs.value = []
}

export function useCatalog() {
  if (!pending) {
    pending = Promise.all([listPools(), listInstanceTypes(), listLabs()])
      .then(([p, it, l]) => {
        pools.value = p
        instanceTypes.value = it
        labs.value = l
      })
      .catch((e: unknown) => {
        pending = null
        throw e
      })
  }
  const ready = pending

  const poolById = computed(() => new Map(pools.value.map((p) => [p.id, p])))
  const instanceTypeById = computed(() => new Map(instanceTypes.value.map((t) => [t.id, t])))
  const labById = computed(() => new Map(labs.value.map((l) => [l.id, l])))

  function instanceTypeOfPool(poolId: number | null | undefined): InstanceType | undefined {
    const pool = poolId == null ? undefined : poolById.value.get(poolId)
    return pool ? instanceTypeById.value.get(pool.instance_type) : undefined
  }

  return { ready, pools, instanceTypes, labs, poolById, instanceTypeById, labById, instanceTypeOfPool }
}
