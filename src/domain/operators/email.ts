// Operator emails are compared case-insensitively: stored trimmed and lower-cased.
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** Something@something.tld, at most 320 characters: enough to catch a typo, not a full RFC 5322 parser. */
export const isEmail = (email: string): boolean => email.length <= 320 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email);
