-- ndfgen.lua -- build-time generator of ndforge (runs under Lua 5.4 or LuaJIT).
--
-- usage: lua ndfgen.lua <spec.lua> <source root> <output dir>
--
-- Reads the spec (pure data) and the templates it names, checks that every
-- NDF_SLOT(NAME) in a template is declared in the spec, that every declared
-- slot is used, and that every family fills every slot; then writes
-- templates.generated.{c,h} into the output dir (only when their content
-- changed).  Local headers (#include "x.cuh") are inlined with #line
-- directives so NVRTC errors point back at the template files; an include
-- not found beside the template is read from the output dir (generated).
--
-- Kernel parameters: a template's `params` declares each parameter struct
-- its kernels take (fields, types, comments); the line NDF_PARAMS(name) in
-- the template becomes that struct, with static_asserts of its size and
-- field offsets.  kernel_params.generated.h gets the same struct for the host
-- (device pointers as CUdeviceptr), the same asserts, a launcher per struct,
-- and a typed request builder per template that declares `args` (its slots
-- in order, each with a domain the builder checks).
local GEN_VERSION = 2

local function die(where, msg)
  io.stderr:write(string.format("ndfgen: %s: error: %s\n", where, msg))
  os.exit(1)
end

local spec_path, root, outdir = arg[1], arg[2], arg[3]
if not (spec_path and root and outdir) then
  die("ndfgen.lua", "usage: lua ndfgen.lua <spec.lua> <source root> <output dir>")
end

local function read_file(path, where)
  local f = io.open(path, "rb")
  if not f then die(where, "cannot open '" .. path .. "'") end
  local s = f:read("*a")
  f:close()
  return s
end

local chunk, err = loadfile(spec_path)
if not chunk then die(spec_path, err) end
local ok, spec = pcall(chunk)
if not ok or type(spec) ~= "table" or type(spec.templates) ~= "table" then
  die(spec_path, "the spec must return a table with a 'templates' list")
end

-- ---- kernel parameter structs (a template's `params`) -------------------------
-- Field types: i32 u32 i64 u64 f32 f64 (scalars), a scalar with a bound
-- ("i64[NDF_MAX_NDIM]", "i32[3]"), or a pointer ("const T*", "u64*"): to a
-- scalar code, u8, i8, void, or a type the template names (a slot such as T,
-- or a type it defines before the struct, such as int2).  Pointers are 8
-- bytes on both sides; the host holds them as CUdeviceptr.
local SCALARS = {
  i32 = { size = 4, cuda = "int", c = "int32_t" },
  u32 = { size = 4, cuda = "unsigned", c = "uint32_t" },
  i64 = { size = 8, cuda = "long long", c = "int64_t" },
  u64 = { size = 8, cuda = "unsigned long long", c = "uint64_t" },
  f32 = { size = 4, cuda = "float", c = "float" },
  f64 = { size = 8, cuda = "double", c = "double" },
}
local POINTEES = { u8 = "unsigned char", i8 = "signed char", void = "void" }
-- The bounds an array field may name, with their values (asserted on both
-- sides: NDF_MAX_NDIM by include/ndforge.h, the others by their templates).
local BOUNDS = { NDF_MAX_NDIM = 12, NDF_MAX_SPATIAL = 8, NDF_SK_MAXSP = 8 }

-- Parses one field {name, type[, comment]} into {name, kind, ...} with its size and alignment.
local function param_field(where, f)
  if type(f) ~= "table" or type(f[1]) ~= "string" or type(f[2]) ~= "string" then
    die(where, "a field is {name, type[, comment]}")
  end
  local name, ty = f[1], f[2]
  if not name:match("^[%a_][%w_]*$") then die(where, "field name '" .. name .. "' is not an identifier") end
  local fw = where .. ": field '" .. name .. "'"
  local const, pointee = "", ty:match("^([%w_]+)%s*%*$")
  if not pointee then const, pointee = "const", ty:match("^const%s+([%w_]+)%s*%*$") end
  if pointee then
    local cuda = SCALARS[pointee] and SCALARS[pointee].cuda or POINTEES[pointee] or pointee
    return { name = name, ptr = true, cuda = (const == "const" and "const " or "") .. cuda .. " *", c = "CUdeviceptr",
             size = 8, align = 8, comment = f[3] }
  end
  local base, bound = ty:match("^([%w_]+)%[([%w_]+)%]$")
  if not base then base = ty end
  local sc = SCALARS[base]
  if not sc then die(fw, "unknown type '" .. ty .. "' (i32 u32 i64 u64 f32 f64, T[bound], or a pointer 'X*')") end
  local n = 1
  if bound then
    n = tonumber(bound) or BOUNDS[bound]
    if not n or n < 1 then die(fw, "unknown array bound '" .. bound .. "'") end
  end
  return { name = name, cuda = sc.cuda, c = sc.c, bound = bound, n = bound and n, size = sc.size * n, align = sc.size,
           comment = f[3] }
end

-- Lays out a struct with the C rules (which NVCC shares on x86-64).
local function param_layout(where, fields)
  if type(fields) ~= "table" or #fields == 0 then die(where, "a parameter struct needs a list of fields") end
  local out, off, maxa, seen = {}, 0, 1, {}
  for i, f in ipairs(fields) do
    local pf = param_field(where .. ": fields[" .. i .. "]", f)
    if seen[pf.name] then die(where, "field '" .. pf.name .. "' declared twice") end
    seen[pf.name] = true
    off = math.floor((off + pf.align - 1) / pf.align) * pf.align
    pf.offset = off
    off = off + pf.size
    if pf.align > maxa then maxa = pf.align end
    out[#out + 1] = pf
  end
  local size = math.floor((off + maxa - 1) / maxa) * maxa
  if size > 4096 then die(where, string.format("%d bytes: a kernel's parameters must fit in 4096", size)) end
  return { fields = out, size = size }
end

-- Every struct, by its (CUDA) name: declared once, in the template that owns it;
-- another template names the owner ({ ndf_line_params = "grey_line" }).
local param_structs, param_order = {}, {}
for ti, t in ipairs(spec.templates) do
  for sname, decl in pairs(t.params or {}) do
    if type(decl) == "table" then
      local where = spec_path .. ": template '" .. tostring(t.name) .. "': params." .. sname
      if not sname:match("^ndf_[%w_]+$") then die(where, "a parameter struct's name starts with ndf_") end
      if param_structs[sname] then die(where, "declared again (first in template '" .. param_structs[sname].owner .. "')") end
      local l = param_layout(where, decl)
      l.name, l.owner, l.cname = sname, t.name, "ndf__" .. sname:sub(5)
      param_structs[sname] = l
      param_order[#param_order + 1] = sname
    end
  end
end
table.sort(param_order)
for _, t in ipairs(spec.templates) do
  for sname, decl in pairs(t.params or {}) do
    if type(decl) == "string" then
      local ps = param_structs[sname]
      if not ps or ps.owner ~= decl then
        die(spec_path .. ": template '" .. t.name .. "': params." .. sname, "template '" .. decl .. "' declares no such struct")
      end
    elseif type(decl) ~= "table" then
      die(spec_path .. ": template '" .. t.name .. "': params." .. sname, "a field list or the name of the template declaring it")
    end
  end
end

-- The CUDA text of a struct (lines), with its asserts.
local function param_cuda(ps)
  local L = { string.format("// struct %s: generated from gen/spec.lua (template '%s'); edit the spec, not this.",
                            ps.name, ps.owner),
              "struct " .. ps.name .. " {" }
  for _, f in ipairs(ps.fields) do
    local decl = f.ptr and (f.cuda .. f.name) or (f.cuda .. " " .. f.name .. (f.bound and ("[" .. f.bound .. "]") or ""))
    L[#L + 1] = "  " .. decl .. ";" .. (f.comment and ("  // " .. f.comment) or "")
  end
  L[#L + 1] = "};"
  local bounds = {}
  for _, f in ipairs(ps.fields) do
    if f.bound and BOUNDS[f.bound] and not bounds[f.bound] then
      bounds[f.bound] = true
      L[#L + 1] = string.format('static_assert(%s == %d, "%s: the bound gen/ndfgen.lua assumes");', f.bound, f.n, f.bound)
    end
  end
  L[#L + 1] = string.format('static_assert(sizeof(%s) == %d, "%s: size (gen/spec.lua)");', ps.name, ps.size, ps.name)
  for _, f in ipairs(ps.fields) do
    -- NVRTC has no offsetof; __INTADDR__ is its front end's constant address.
    L[#L + 1] = string.format('static_assert(__INTADDR__(&((%s *)0)->%s) == %d, "%s.%s: offset");', ps.name, f.name,
                              f.offset, ps.name, f.name)
  end
  return L
end


-- Splits s into lines, keeping the text of each (without the newline).
local function lines_of(s)
  local t = {}
  for line in (s .. (s:sub(-1) == "\n" and "" or "\n")):gmatch("(.-)\n") do t[#t + 1] = line end
  return t
end

-- Expands #include "local" lines and NDF_PARAMS(name) lines (the struct of
-- t's params), recording (file, line) for each output line.
local function expand(t, relpath, out, seen, used_params)
  if seen[relpath] then return end
  seen[relpath] = true
  -- A header generated at build time (gen/ecc.lua) lives in the output dir.
  local path = root .. "/" .. relpath
  local probe = io.open(path, "rb")
  if probe then probe:close() else path = outdir .. "/" .. (relpath:match("([^/]*)$")) end
  local text = read_file(path, relpath)
  local dir = relpath:match("^(.*)/[^/]*$") or "."
  out[#out + 1] = { text = string.format('#line 1 "%s"', relpath), file = relpath, line = 0 }
  for n, line in ipairs(lines_of(text)) do
    local inc = line:match('^%s*#%s*include%s+"([^"]+)"')
    local pname = line:match("^%s*NDF_PARAMS%(([%w_]+)%)%s*$")
    if pname then
      if not (t.params and t.params[pname]) then
        die(relpath .. ":" .. n, "NDF_PARAMS(" .. pname .. "): template '" .. t.name .. "' declares no such params in " .. spec_path)
      end
      used_params[pname] = true
      out[#out + 1] = { text = string.format('#line 1 "gen/spec.lua: %s"', pname), file = relpath, line = n }
      for _, pl in ipairs(param_cuda(param_structs[pname])) do out[#out + 1] = { text = pl, file = relpath, line = n } end
      out[#out + 1] = { text = string.format('#line %d "%s"', n + 1, relpath), file = relpath, line = n }
    elseif inc then
      expand(t, dir .. "/" .. inc, out, seen, used_params)
      out[#out + 1] = { text = string.format('#line %d "%s"', n + 1, relpath), file = relpath, line = n }
    elseif line:match("^%s*#%s*pragma%s+once") then
      out[#out + 1] = { text = "", file = relpath, line = n }
    else
      out[#out + 1] = { text = line, file = relpath, line = n }
    end
  end
end

-- A 62-bit content hash (two 31-bit polynomial hashes) that Lua 5.4 and
-- LuaJIT compute identically: every intermediate stays below 2^53.
local function hash_hex(s)
  local a, b = 7, 11
  local M = 2147483647
  for i = 1, #s do
    local c = s:byte(i)
    a = (a * 31 + c) % M
    b = (b * 131 + c) % M
  end
  return string.format("%08x%08x", a, b)
end

local function c_string(s)
  s = s:gsub("\\", "\\\\"):gsub('"', '\\"'):gsub("\t", "\\t")
  return '"' .. s .. '\\n"'
end

local function sorted_keys(t)
  local k = {}
  for name in pairs(t) do k[#k + 1] = name end
  table.sort(k)
  return k
end

local hdr, src = {}, {}
local all_hash_input = { "ndfgen " .. GEN_VERSION }
local templates_out = {}

for ti, t in ipairs(spec.templates) do
  local where = spec_path .. ": templates[" .. ti .. "]"
  if type(t.name) ~= "string" or not t.name:match("^[%a_][%w_]*$") then die(where, "'name' must be an identifier") end
  where = spec_path .. ": template '" .. t.name .. "'"
  if type(t.file) ~= "string" then die(where, "'file' missing") end
  if type(t.slots) ~= "table" then die(where, "'slots' missing") end
  if type(t.kernels) ~= "table" or #t.kernels == 0 then die(where, "'kernels' missing") end
  local lines, used_params = {}, {}
  expand(t, t.file, lines, {}, used_params)
  for _, pname in ipairs(sorted_keys(t.params or {})) do
    if not used_params[pname] then die(where, "params '" .. pname .. "' declared but no NDF_PARAMS(" .. pname .. ") in " .. t.file) end
  end
  -- Cut the text into literal fragments and slot references.
  local frags, used = {}, {}
  local buf = {}
  for _, l in ipairs(lines) do
    local pos = 1
    local text = l.text
    while true do
      local s, e, name = text:find("NDF_SLOT%(([^)]*)%)", pos)
      if not s then break end
      if not name:match("^[%a_][%w_]*$") then
        die(l.file .. ":" .. l.line, "malformed slot 'NDF_SLOT(" .. name .. ")'")
      end
      if not t.slots[name] then
        die(l.file .. ":" .. l.line, "unknown slot '" .. name .. "' (not declared for template '" .. t.name .. "' in " .. spec_path .. ")")
      end
      used[name] = true
      buf[#buf + 1] = text:sub(pos, s - 1)
      frags[#frags + 1] = { lit = table.concat(buf) }
      buf = {}
      frags[#frags + 1] = { slot = name }
      pos = e + 1
    end
    buf[#buf + 1] = text:sub(pos) .. "\n"
  end
  frags[#frags + 1] = { lit = table.concat(buf) }
  for _, name in ipairs(sorted_keys(t.slots)) do
    if not used[name] then die(where, "slot '" .. name .. "' is declared but never used in " .. t.file) end
  end
  local slot_names = sorted_keys(t.slots)
  local slot_index = {}
  for i, name in ipairs(slot_names) do slot_index[name] = i - 1 end
  -- Families: every slot filled, nothing else.
  local combos = {}
  for fi, fam in ipairs(t.families or {}) do
    local fwhere = where .. ": families[" .. fi .. "]"
    for name in pairs(fam) do
      if not t.slots[name] then die(fwhere, "unknown slot '" .. name .. "'") end
    end
    for _, name in ipairs(slot_names) do
      if type(fam[name]) ~= "table" or #fam[name] == 0 then die(fwhere, "slot '" .. name .. "' is not filled") end
    end
    local function rec(i, acc)
      if i > #slot_names then
        local c = {}
        for k, v in ipairs(acc) do c[k] = v end
        combos[#combos + 1] = c
        return
      end
      for _, v in ipairs(fam[slot_names[i]]) do
        acc[i] = tostring(v)
        rec(i + 1, acc)
      end
    end
    rec(1, {})
  end
  local full = {}
  for _, f in ipairs(frags) do full[#full + 1] = f.lit or ("NDF_SLOT(" .. f.slot .. ")") end
  local h = hash_hex(table.concat(full))
  all_hash_input[#all_hash_input + 1] = t.name .. ":" .. h
  templates_out[#templates_out + 1] = { t = t, frags = frags, slot_names = slot_names, slot_index = slot_index,
                                        combos = combos, hash = h }
end

local gen_hash = hash_hex(table.concat(all_hash_input, "\n"))

hdr[#hdr + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ndfgen.lua from gen/spec.lua and templates/) */"
hdr[#hdr + 1] = "#ifndef NDF_TEMPLATES_GENERATED_H"
hdr[#hdr + 1] = "#define NDF_TEMPLATES_GENERATED_H"
hdr[#hdr + 1] = "/* One piece of a template: literal text, or a slot (index into slot_names). */"
hdr[#hdr + 1] = "typedef struct ndf__tfrag { const char *text; int slot; } ndf__tfrag;"
hdr[#hdr + 1] = "typedef struct ndf__template {"
hdr[#hdr + 1] = "  const char *name, *file, *hash;"
hdr[#hdr + 1] = "  int nslots; const char *const *slot_names;"
hdr[#hdr + 1] = "  int nfrags; const ndf__tfrag *frags;"
hdr[#hdr + 1] = "  int nkernels; const char *const *kernels;"
hdr[#hdr + 1] = "  int nfamily; const char *const *family; /* nfamily rows of nslots values */"
hdr[#hdr + 1] = "} ndf__template;"
hdr[#hdr + 1] = "extern const ndf__template ndf__templates[];"
hdr[#hdr + 1] = "extern const int ndf__ntemplates;"
hdr[#hdr + 1] = "/* Hash over the generator version and every template. */"
hdr[#hdr + 1] = "extern const char ndf__generator_hash[];"
hdr[#hdr + 1] = "#endif"

src[#src + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ndfgen.lua from gen/spec.lua and templates/) */"
src[#src + 1] = '#include "templates.generated.h"'
src[#src + 1] = "#include <stddef.h>"
for i, o in ipairs(templates_out) do
  local p = "t" .. i
  local names = {}
  for _, n in ipairs(o.slot_names) do names[#names + 1] = '"' .. n .. '"' end
  src[#src + 1] = string.format("static const char *const %s_slots[] = {%s};", p, table.concat(names, ", "))
  local ks = {}
  for _, k in ipairs(o.t.kernels) do ks[#ks + 1] = '"' .. k .. '"' end
  src[#src + 1] = string.format("static const char *const %s_kernels[] = {%s};", p, table.concat(ks, ", "))
  src[#src + 1] = string.format("static const ndf__tfrag %s_frags[] = {", p)
  for _, f in ipairs(o.frags) do
    if f.lit then
      local parts = lines_of(f.lit)
      local out = {}
      for j, l in ipairs(parts) do
        if j < #parts or f.lit:sub(-1) == "\n" then out[#out + 1] = "    " .. c_string(l)
        else out[#out + 1] = '    "' .. l:gsub("\\", "\\\\"):gsub('"', '\\"') .. '"' end
      end
      if #out == 0 then out[1] = '    ""' end
      src[#src + 1] = "  {\n" .. table.concat(out, "\n") .. ", -1},"
    else
      src[#src + 1] = string.format("  {NULL, %d}, /* %s */", o.slot_index[f.slot], f.slot)
    end
  end
  src[#src + 1] = "};"
  local fam = {}
  for _, c in ipairs(o.combos) do
    local row = {}
    for _, v in ipairs(c) do row[#row + 1] = '"' .. v .. '"' end
    fam[#fam + 1] = "  " .. table.concat(row, ", ") .. ","
  end
  if #fam == 0 then fam[1] = "  NULL" end
  src[#src + 1] = string.format("static const char *const %s_family[] = {\n%s\n};", p, table.concat(fam, "\n"))
end
src[#src + 1] = "const ndf__template ndf__templates[] = {"
for i, o in ipairs(templates_out) do
  local p = "t" .. i
  src[#src + 1] = string.format('  {"%s", "%s", "%s", %d, %s_slots, %d, %s_frags, %d, %s_kernels, %d, %s_family},',
    o.t.name, o.t.file, o.hash, #o.slot_names, p, #o.frags, p, #o.t.kernels, p, #o.combos, p)
end
src[#src + 1] = "};"
src[#src + 1] = string.format("const int ndf__ntemplates = %d;", #templates_out)
src[#src + 1] = string.format('const char ndf__generator_hash[] = "%s";', gen_hash)

-- Selection networks for rank filters (gen/selnet.lua), when the spec asks.
local sn = spec.selection_networks
local snh, snc = {}, {}
snh[#snh + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ndfgen.lua, gen/selnet.lua from gen/spec.lua) */"
snh[#snh + 1] = "#ifndef NDF_SELNETS_GENERATED_H"
snh[#snh + 1] = "#define NDF_SELNETS_GENERATED_H"
snh[#snh + 1] = "#include <stdint.h>"
snh[#snh + 1] = "/* A pruned selection network: after its steps, register `out` of a window of n"
snh[#snh + 1] = " * values holds the k-th smallest.  Steps are 3 bytes (a, b, kind) in"
snh[#snh + 1] = " * ndf__selnet_steps from `offset`: kind 0 = (a, b) <- (min, max), 1 = a <- min,"
snh[#snh + 1] = " * 2 = b <- max.  Entries are sorted by (n, k). */"
snh[#snh + 1] = "typedef struct ndf__selnet { uint8_t n, k, out; uint16_t nsteps; uint32_t offset; } ndf__selnet;"
snh[#snh + 1] = "extern const ndf__selnet ndf__selnets[];"
snh[#snh + 1] = "extern const int ndf__nselnets;"
snh[#snh + 1] = "extern const uint8_t ndf__selnet_steps[];"
snh[#snh + 1] = "#endif"
snc[#snc + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ndfgen.lua, gen/selnet.lua from gen/spec.lua) */"
snc[#snc + 1] = '#include "selnets.generated.h"'
do
  local entries, bytes = {}, {}
  if sn then
    local where = spec_path .. ": selection_networks"
    local all, med = sn.all_ranks_up_to, sn.medians_up_to
    if type(all) ~= "number" or type(med) ~= "number" or all < 1 or med < all or med > 255 then
      die(where, "needs numbers all_ranks_up_to >= 1 and medians_up_to in all_ranks_up_to..255")
    end
    local dir = arg[0]:match("^(.*)[/\\][^/\\]*$") or "."
    local selnet = dofile(dir .. "/selnet.lua")
    local off = 0
    for n = 1, med do
      for k = 0, n - 1 do
        if n <= all or k == math.floor(n / 2) then
          local net, out = selnet.network(n, k)
          entries[#entries + 1] = string.format("  {%d, %d, %d, %d, %d},", n, k, out, #net, off)
          local row = {}
          for _, st in ipairs(net) do row[#row + 1] = string.format("%d,%d,%d", st[1], st[2], st[3]) end
          if #row > 0 then bytes[#bytes + 1] = "  " .. table.concat(row, ",") .. "," end
          off = off + 3 * #net
        end
      end
    end
  end
  if #entries == 0 then entries[1] = "  {0, 0, 0, 0, 0}," end
  if #bytes == 0 then bytes[1] = "  0," end
  snc[#snc + 1] = "const ndf__selnet ndf__selnets[] = {\n" .. table.concat(entries, "\n") .. "\n};"
  snc[#snc + 1] = string.format("const int ndf__nselnets = %d;", sn and #entries or 0)
  snc[#snc + 1] = "const uint8_t ndf__selnet_steps[] = {\n" .. table.concat(bytes, "\n") .. "\n};"
end

-- ---- kernel_params.generated.h: the host's side of each parameter struct -------
-- A slot domain in a template's `args` ("NAME:DOMAIN"): dtype (an ndf_dtype,
-- filled with its C name), text (any text: literals, generated code),
-- lo..hi (an int range), a|b|c (ints, or C type names).
local function slot_domain(where, a)
  local name, dom = a:match("^([%a_][%w_]*):(.+)$")
  if not name then die(where, "an arg is 'SLOT:DOMAIN', not '" .. a .. "'") end
  if dom == "dtype" or dom == "text" then return { name = name, kind = dom, src = a } end
  local lo, hi = dom:match("^(%-?%d+)%.%.(%-?%d+)$")
  if lo then return { name = name, kind = "range", lo = tonumber(lo), hi = tonumber(hi), src = a } end
  local vals, ints = {}, true
  for v in (dom .. "|"):gmatch("([^|]*)|") do
    vals[#vals + 1] = v
    if not v:match("^%-?%d+$") then ints = false end
  end
  return { name = name, kind = ints and "ints" or "ctypes", values = vals, src = a }
end
local DTYPE_CNAMES = { ["unsigned char"] = true, ["signed char"] = true, ["unsigned short"] = true, short = true,
                       ["unsigned int"] = true, int = true, float = true, double = true, bool = true,
                       ["long long"] = true, ["unsigned long long"] = true }
local function in_domain(d, v)
  if d.kind == "text" then return true end
  if d.kind == "dtype" then return DTYPE_CNAMES[v] ~= nil end
  if d.kind == "range" then
    local n = tonumber(v)
    return n ~= nil and n == math.floor(n) and n >= d.lo and n <= d.hi
  end
  for _, x in ipairs(d.values) do if x == v then return true end end
  return false
end

local kp = {}
kp[#kp + 1] = "/* This is a generated file. DO NOT EDIT! (gen/ndfgen.lua from gen/spec.lua) */"
kp[#kp + 1] = "/* Each kernel parameter struct the spec declares, laid out as its template's"
kp[#kp + 1] = " * (the same size and field offsets, asserted here and in the template), with"
kp[#kp + 1] = " * a launcher; and a typed request builder per template that declares args. */"
kp[#kp + 1] = "#ifndef NDF_KERNEL_PARAMS_GENERATED_H"
kp[#kp + 1] = "#define NDF_KERNEL_PARAMS_GENERATED_H"
kp[#kp + 1] = "#include <stddef.h>"
kp[#kp + 1] = "#include <stdint.h>"
kp[#kp + 1] = "#include <string.h>"
kp[#kp + 1] = '#include "internal.h"'
kp[#kp + 1] = '_Static_assert(NDF_MAX_NDIM == 12, "NDF_MAX_NDIM: the bound gen/ndfgen.lua assumes");'
kp[#kp + 1] = '_Static_assert(NDF_MAX_SPATIAL == 8, "NDF_MAX_SPATIAL: the bound gen/ndfgen.lua assumes");'
for _, sname in ipairs(param_order) do
  local ps = param_structs[sname]
  kp[#kp + 1] = ""
  kp[#kp + 1] = string.format("/* struct %s of template '%s'. */", ps.name, ps.owner)
  kp[#kp + 1] = "typedef struct " .. ps.cname .. " {"
  for _, f in ipairs(ps.fields) do
    local public = f.bound == "NDF_MAX_NDIM" or f.bound == "NDF_MAX_SPATIAL" -- include/ndforge.h
    local n = f.bound and (public and ("[" .. f.bound .. "]") or ("[" .. f.n .. "]")) or ""
    kp[#kp + 1] = string.format("  %s %s%s;%s", f.c, f.name, n, f.comment and (" /* " .. f.comment:gsub("%*/", "* /") .. " */") or "")
  end
  kp[#kp + 1] = "} " .. ps.cname .. ";"
  kp[#kp + 1] = string.format('_Static_assert(sizeof(%s) == %d, "%s: size");', ps.cname, ps.size, ps.cname)
  for _, f in ipairs(ps.fields) do
    kp[#kp + 1] = string.format('_Static_assert(offsetof(%s, %s) == %d, "%s.%s: offset");', ps.cname, f.name, f.offset,
                                ps.cname, f.name)
  end
  local base = ps.cname:gsub("_params$", "")
  kp[#kp + 1] = string.format("static inline ndf_status %s_launch(ndf_ctx *ctx, const char *name, CUfunction fn, unsigned grid,", base)
  kp[#kp + 1] = string.format("                                    unsigned bx, unsigned by, unsigned smem, %s *p) {", ps.cname)
  kp[#kp + 1] = "  return ndf__launch(ctx, name, fn, grid, bx, by, smem, p);"
  kp[#kp + 1] = "}"
end

for _, t in ipairs(spec.templates) do
  if t.args then
    local where = spec_path .. ": template '" .. t.name .. "': args"
    local doms, seen = {}, {}
    for i, a in ipairs(t.args) do
      local d = slot_domain(where .. "[" .. i .. "]", a)
      if not t.slots[d.name] then die(where, "'" .. d.name .. "' is not a slot") end
      if seen[d.name] then die(where, "'" .. d.name .. "' listed twice") end
      seen[d.name] = true
      doms[#doms + 1] = d
    end
    for _, name in ipairs(sorted_keys(t.slots)) do
      if not seen[name] then die(where, "slot '" .. name .. "' is missing") end
    end
    for fi, fam in ipairs(t.families or {}) do
      for _, d in ipairs(doms) do
        for _, v in ipairs(fam[d.name]) do
          if not in_domain(d, tostring(v)) then
            die(spec_path .. ": template '" .. t.name .. "': families[" .. fi .. "]",
                "slot " .. d.name .. " = '" .. tostring(v) .. "' is outside its domain '" .. d.src .. "'")
          end
        end
      end
    end
    local multi = #t.kernels > 1
    local sig = { "ndf__kernel_req *r" }
    if multi then sig[#sig + 1] = "const char *kernel" end
    for _, d in ipairs(doms) do
      sig[#sig + 1] = (d.kind == "dtype" and "ndf_dtype " or (d.kind == "text" or d.kind == "ctypes") and "const char *" or "int ") .. d.name
    end
    kp[#kp + 1] = ""
    kp[#kp + 1] = string.format("/* A request for template '%s'%s: every slot from an argument in its", t.name,
                                multi and " (kernel: one of its kernels)" or " (" .. t.kernels[1] .. ")")
    kp[#kp + 1] = " * domain; 1, or 0 when an argument is outside it (its slot is then left"
    kp[#kp + 1] = " * unfilled, and ndf__jit_get rejects the request). */"
    kp[#kp + 1] = string.format("static inline int ndf__req_%s(%s) {", t.name, table.concat(sig, ", "))
    kp[#kp + 1] = "  int ok = 1;"
    if multi then
      local ks = {}
      for _, k in ipairs(t.kernels) do ks[#ks + 1] = string.format('strcmp(kernel, "%s") == 0', k) end
      kp[#kp + 1] = string.format('  ndf__req_init(r, "%s", kernel);', t.name)
      kp[#kp + 1] = "  if (!(" .. table.concat(ks, " ||\n        ") .. ")) ok = 0;"
    else
      kp[#kp + 1] = string.format('  ndf__req_init(r, "%s", "%s");', t.name, t.kernels[1])
    end
    for _, d in ipairs(doms) do
      local n = d.name
      if d.kind == "dtype" then
        kp[#kp + 1] = string.format('  if ((unsigned)%s < (unsigned)NDF_DTYPE_COUNT) ndf__req_set(r, "%s", "%%s", ndf__dtype_ctype(%s));', n, n, n)
        kp[#kp + 1] = "  else ok = 0;"
      elseif d.kind == "text" then
        kp[#kp + 1] = string.format('  if (%s) ndf__req_set(r, "%s", "%%s", %s);', n, n, n)
        kp[#kp + 1] = "  else ok = 0;"
      elseif d.kind == "range" then
        kp[#kp + 1] = string.format('  if (%s >= %d && %s <= %d) ndf__req_set(r, "%s", "%%d", %s);', n, d.lo, n, d.hi, n, n)
        kp[#kp + 1] = "  else ok = 0;"
      elseif d.kind == "ints" then
        local c = {}
        for _, v in ipairs(d.values) do c[#c + 1] = n .. " == " .. v end
        kp[#kp + 1] = string.format('  if (%s) ndf__req_set(r, "%s", "%%d", %s);', table.concat(c, " || "), n, n)
        kp[#kp + 1] = "  else ok = 0;"
      else
        local c = {}
        for _, v in ipairs(d.values) do c[#c + 1] = string.format('strcmp(%s, "%s") == 0', n, v) end
        kp[#kp + 1] = string.format('  if (%s && (%s)) ndf__req_set(r, "%s", "%%s", %s);', n, table.concat(c, " || "), n, n)
        kp[#kp + 1] = "  else ok = 0;"
      end
    end
    kp[#kp + 1] = "  return ok;"
    kp[#kp + 1] = "}"
  end
end
kp[#kp + 1] = "#endif"

-- Write only when the content changed, so dependents are not rebuilt for nothing.
local function write_if_changed(path, text)
  local f = io.open(path, "rb")
  if f then
    local old = f:read("*a")
    f:close()
    if old == text then return end
  end
  f = io.open(path, "wb")
  if not f then die(path, "cannot write") end
  f:write(text)
  f:close()
end
os.execute('mkdir -p "' .. outdir .. '"')
write_if_changed(outdir .. "/templates.generated.h", table.concat(hdr, "\n") .. "\n")
write_if_changed(outdir .. "/templates.generated.c", table.concat(src, "\n") .. "\n")
write_if_changed(outdir .. "/selnets.generated.h", table.concat(snh, "\n") .. "\n")
write_if_changed(outdir .. "/selnets.generated.c", table.concat(snc, "\n") .. "\n")
write_if_changed(outdir .. "/kernel_params.generated.h", table.concat(kp, "\n") .. "\n")
