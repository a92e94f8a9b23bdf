// int64 fields are bigint in the generated types; the domain works in numbers
// (every value it accepts is within 2^53, which the validators enforce).
export const num = (v: bigint): number => Number(v);
export const optNum = (v: bigint | undefined): number | undefined => (v === undefined ? undefined : Number(v));
export const big = (v: number): bigint => BigInt(Math.trunc(v));

export const ratelimitsIn = (list: ReadonlyArray<{ name: string; limit: bigint; duration: bigint; autoApply?: boolean | undefined }>) =>
  list.map((r) => ({ name: r.name, limit: num(r.limit), duration: num(r.duration), autoApply: r.autoApply }));
