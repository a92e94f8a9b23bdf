// A result that is a value when nothing had to wait, a promise otherwise. The hot
// paths (a cached key's verifyKey, a cached identifier's ratelimit.limit, the
// in-process limiter) answer with the value: each promise on the way up was a
// microtask turn of its own (bench/README.md, "Promises on the hot paths").
// Every door awaits either; a throw from the call itself is the same as a
// rejection there.

export type Answer<T> = T | Promise<T>;

/** f applied to the answer: at once to a value, when it settles to a promise. */
export function andThen<T, U>(answer: Answer<T>, f: (value: T) => Answer<U>): Answer<U> {
  return answer instanceof Promise ? answer.then(f) : f(answer);
}
