// Refill periods on UTC dates (docs/ratelimits.md, "Credits"). A daily refill
// is due once per UTC day; a monthly one on refillDay, or on the month's last day
// when the month is shorter. The start of the current period is what a key's last refill is
// compared with: a key last refilled before it is due now.
import type { Refill } from "../../core/records.js";

const DAY = 86_400_000;

function refillDateIn(year: number, month: number, day: number): number {
  const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(day, last));
}

/** Unix ms of the most recent refill boundary at or before `now`. */
export function currentRefillPeriodStart(refill: Refill, now: number): number {
  if (refill.day === undefined) return Math.floor(now / DAY) * DAY;
  const d = new Date(now);
  const thisMonth = refillDateIn(d.getUTCFullYear(), d.getUTCMonth(), refill.day);
  if (thisMonth <= now) return thisMonth;
  return refillDateIn(d.getUTCFullYear(), d.getUTCMonth() - 1, refill.day);
}

export const refillDue = (refill: Refill, lastRefillAt: number, now: number): boolean => lastRefillAt < currentRefillPeriodStart(refill, now);
