// Decimal strings (fencing tokens and counters): compared exactly in Lua, recognised in TypeScript.

/** Lua: is decimal string a greater than decimal string b (both canonical, no leading zeros)? */
export const GREATER = `local function greater(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
`;

/** A canonical non-negative decimal integer. */
export const DECIMAL = /^(0|[1-9][0-9]*)$/;
