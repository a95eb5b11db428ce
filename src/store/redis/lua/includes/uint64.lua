--[[
  Decimal uint64 helpers. Sequences travel and are stored as canonical decimal strings (no sign, no
  leading zeros). Lua numbers are doubles, exact only up to 2^53, so a sequence is never converted to
  a number: canonical strings compare equal exactly when the integers do, and the successor is
  computed digit by digit.
]]
local maxUint64 = '18446744073709551615'

-- True when value is a canonical decimal string of a uint64 (0 .. 2^64-1).
local function isUint64(value)
  if type(value) ~= 'string' then return false end
  if value ~= '0' and not string.match(value, '^[1-9]%d*$') then return false end
  if #value ~= #maxUint64 then return #value < #maxUint64 end
  return value <= maxUint64
end

-- The canonical decimal successor of a canonical decimal string (may exceed uint64; callers
-- refuse a head at maxUint64 first).
local function nextUint64(value)
  -- Up to 13 digits the double arithmetic is exact and tostring prints every digit.
  if #value <= 13 then return tostring(tonumber(value) + 1) end
  local digits = {}
  local carry = 1
  for index = #value, 1, -1 do
    local digit = string.byte(value, index) - 48 + carry
    if digit == 10 then
      digits[index] = '0'
      carry = 1
    else
      digits[index] = string.char(48 + digit)
      carry = 0
    end
  end
  local text = table.concat(digits)
  if carry == 1 then text = '1' .. text end
  return text
end
