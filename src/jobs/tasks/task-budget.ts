// Which planned tasks fit the job's reservation (CONTRACT §6): tasks are taken in plan order (the
// product's priority) while their summed unit cost stays within the reservation; from the first
// task that would exceed it, scheduling stops and every later task is `budget_exhausted`.
import type { TaskPlan } from '../../contract/tasks.ts';

export interface BudgetedTask {
  plan: TaskPlan;
  status: 'pending' | 'budget_exhausted';
}

/** Plans repeating a (check, objectKey) are one task: the first wins, as INSERT IGNORE would. */
export function dedupePlans(plans: readonly TaskPlan[]): TaskPlan[] {
  const seen = new Set<string>();
  return plans.filter((p) => {
    const k = `${p.check}\n${p.objectKey}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

export function budgetTasks(plans: readonly TaskPlan[], reserved: number, alreadyPlanned = 0): BudgetedTask[] {
  let spent = alreadyPlanned;
  let stopped = false;
  return plans.map((plan) => {
    if (!stopped && spent + plan.unitCost <= reserved) {
      spent += plan.unitCost;
      return { plan, status: 'pending' };
    }
    stopped = true;
    return { plan, status: 'budget_exhausted' };
  });
}
