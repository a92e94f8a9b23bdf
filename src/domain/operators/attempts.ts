// Failed sign-in attempts, counted per email and per client address in a sliding
// window kept in this process's memory. Not deps.limiter: that is the customers'
// rate limiting (workspace namespaces, overrides, Redis); sign-in needs none of
// it, and a per-instance count only multiplies the allowance by the number of
// instances, which scrypt's cost per attempt still keeps slow.
import { LRUCache } from "lru-cache";

export interface AttemptLimits {
  perEmail: number;
  perIp: number;
  windowMs: number;
}

export class SignInAttempts {
  // Bounded: a flood of distinct emails evicts the oldest counters instead of growing memory.
  // Two caches, so that a flood of emails cannot evict the counter of an address, nor the reverse.
  private readonly addresses = new LRUCache<string, number[]>({ max: 50_000 });
  private readonly emails = new LRUCache<string, number[]>({ max: 50_000 });

  constructor(private readonly limits: AttemptLimits) {}

  /**
   * Records an attempt unless one of its counters is full; returns the seconds to
   * wait when refused, or 0 when the attempt may go ahead. The address is checked
   * first, and a refused attempt writes nothing: refused attempts cost nothing, so
   * a flood of them must not evict (and so reset) the counter of a locked email.
   */
  take(email: string, ip: string, now: number): number {
    const fromIp = this.recent(this.addresses, ip, now);
    if (fromIp.length >= this.limits.perIp) return this.waitSeconds(fromIp, now);
    const forEmail = this.recent(this.emails, email, now);
    if (forEmail.length >= this.limits.perEmail) return this.waitSeconds(forEmail, now);
    this.addresses.set(ip, [...fromIp, now]);
    this.emails.set(email, [...forEmail, now]);
    return 0;
  }

  /**
   * Takes back an attempt that succeeded: only failures count, so an operator who
   * signs in often is never locked out. (Counted first and forgiven after, so
   * attempts sent in parallel cannot all slip past a full counter.)
   */
  forgive(email: string, ip: string, at: number): void {
    for (const [cache, key] of [
      [this.addresses, ip],
      [this.emails, email],
    ] as const) {
      const times = cache.get(key);
      const i = times?.indexOf(at) ?? -1;
      if (i >= 0) times?.splice(i, 1);
      if (times?.length === 0) cache.delete(key);
    }
  }

  /** The attempts of a key still in the window; never creates an entry. */
  private recent(cache: LRUCache<string, number[]>, key: string, now: number): number[] {
    return (cache.get(key) ?? []).filter((t) => now - t < this.limits.windowMs);
  }

  private waitSeconds(times: number[], now: number): number {
    return Math.max(1, Math.ceil(((times[0] as number) + this.limits.windowMs - now) / 1000));
  }
}
