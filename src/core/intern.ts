// One copy of a string that many records repeat. Each database row brings its
// own copy of its workspace's and API's ids, so a million cached keys of one API
// held a million copies of the same few strings (and of the cache tags made from
// them): with 200,000 records shaped like a key's, 943 bytes of heap a cached
// key with its own copies, 702 with these shared.

/** Remembers up to `max` distinct strings; past that it forgets them all and starts again (a string it forgot is still correct, only no longer shared). */
export class Interner {
  private readonly known = new Map<string, string>();
  constructor(private readonly max = 10_000) {}

  /** The first copy of `s` seen (since the last forgetting), or `s` itself. */
  of(s: string): string {
    const first = this.known.get(s);
    if (first !== undefined) return first;
    if (this.known.size >= this.max) this.known.clear();
    this.known.set(s, s);
    return s;
  }

  get size(): number {
    return this.known.size;
  }
}
