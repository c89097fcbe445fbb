-- opsgen.lua -- build-time generator of ndforge's op tables (runs under Lua 5.4 or LuaJIT).
--
-- usage: lua opsgen.lua <ops.lua> <output dir>
--
-- Reads the op registry (gen/ops.lua, pure data), checks every entry, and
-- writes into the output dir, each only when its content changed:
--   ops.generated.h  X-macro tables for the CLI, `ndforge cache warm`, the
--                    tests and the benchmark (docs/adr/0017-op-registry.md)
--   ops.json         the same registry for the Python package
--   ops.md           the docs' op list; docs/ops.md is a committed copy that
--                    the test ops_doc compares with it
local registry_path, outdir = arg[1], arg[2]

local function die(where, msg)
  io.stderr:write(string.format("opsgen: %s: error: %s\n", where, msg))
  os.exit(1)
end

if not (registry_path and outdir) then die("opsgen.lua", "usage: lua opsgen.lua <ops.lua> <output dir>") end

local chunk, err = loadfile(registry_path)
if not chunk then die(registry_path, err) end
local ok, reg = pcall(chunk)
if not ok or type(reg) ~= "table" or type(reg.ops) ~= "table" or type(reg.families) ~= "table" then
  die(registry_path, "the registry must return a table with 'families' and 'ops' lists")
end

-- ---------------------------------------------------------------------------
-- Validation: every error names the offending entry.

local function is_ident(s) return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil end
local function is_line(s) return type(s) == "string" and s ~= "" and not s:find("[\n\"\\]") end

local families, family_of = {}, {}
for i, f in ipairs(reg.families) do
  local where = string.format("families[%d]", i)
  if not is_ident(f.name) then die(where, "'name' must be a C identifier") end
  where = "family '" .. f.name .. "'"
  if family_of[f.name] then die(where, "declared twice") end
  if not is_line(f.doc) then die(where, "'doc' must be one line without quotes or backslashes") end
  if f.warm ~= nil and not is_ident(f.warm) then die(where, "'warm' must be a C identifier") end
  families[#families + 1] = f
  family_of[f.name] = f
end

local KEYS = { name = 1, family = 1, entry = 1, doc = 1, cli = 1, command = 1, composite = 1, test = 1, bench = 1,
  warm = 1, warm_options = 1 }
local names, bench_ids, bench_keys, test_names = {}, {}, {}, {}
for i, op in ipairs(reg.ops) do
  local where = string.format("ops[%d]", i)
  if not is_ident(op.name) then die(where, "'name' must be a C identifier (scipy's name)") end
  where = "op '" .. op.name .. "'"
  if names[op.name] then die(where, "declared twice") end
  names[op.name] = true
  for k in pairs(op) do
    if not KEYS[k] then die(where, "unknown key '" .. tostring(k) .. "'") end
  end
  if not family_of[op.family] then die(where, "unknown family '" .. tostring(op.family) .. "'") end
  if not is_ident(op.entry) or not op.entry:match("^ndf_") then
    die(where, "'entry' must be the public C function (ndf_...)")
  end
  if not is_line(op.doc) then die(where, "'doc' must be one line without quotes or backslashes") end
  if op.composite ~= nil and type(op.composite) ~= "boolean" then die(where, "'composite' must be a boolean") end
  if op.warm ~= nil and not is_ident(op.warm) then die(where, "'warm' must be a C identifier") end
  if op.cli and op.command then die(where, "'cli' (an op of `ndforge run`) and 'command' exclude each other") end
  if op.command ~= nil and not is_ident(op.command) then die(where, "'command' must be a word") end
  local function check_options(list, what)
    if type(list) ~= "table" then die(where, what .. " must be a list") end
    local seen = {}
    for _, o in ipairs(list) do
      if type(o) ~= "string" or not o:match("^[a-z][a-z0-9-]*$") then
        die(where, what .. ": '" .. tostring(o) .. "' is not an option name such as batch-dims")
      end
      if o == "device" then die(where, what .. ": --device applies to every op; leave it out") end
      if seen[o] then die(where, what .. ": '" .. o .. "' given twice") end
      seen[o] = true
    end
    return seen
  end
  if op.warm_options ~= nil then
    if op.cli then die(where, "'warm_options' is for ops without 'cli' (cache warm takes an op of `run` with its options)") end
    check_options(op.warm_options, "warm_options")
  end
  if op.cli then
    if not is_ident(op.cli.adapter) then die(where, "cli.adapter must be a C identifier") end
    local seen = check_options(op.cli.options, "cli.options")
    for _, o in ipairs(op.cli.required or {}) do
      if not seen[o] then die(where, "cli.required: '" .. tostring(o) .. "' is not one of its options") end
    end
  end
  if op.test ~= nil then
    if not is_ident(op.test) then die(where, "'test' must be a C identifier") end
    if test_names[op.family .. "/" .. op.test] then die(where, "test name '" .. op.test .. "' used twice") end
    test_names[op.family .. "/" .. op.test] = true
  end
  for j, b in ipairs(op.bench or {}) do
    local bw = string.format("%s: bench[%d]", where, j)
    if not is_ident(b.id) or not b.id:match("^[A-Z0-9_]+$") then die(bw, "'id' must be an upper-case C identifier") end
    if bench_ids[b.id] then die(bw, "id '" .. b.id .. "' used twice") end
    if not is_ident(b.key) then die(bw, "'key' must be a C identifier") end
    if bench_keys[b.key] then die(bw, "key '" .. b.key .. "' used twice") end
    if b.arg ~= nil and not is_ident(b.arg) then die(bw, "'arg' must be a C identifier") end
    if b.setup ~= nil and not (is_ident(b.setup) and b.setup:match("^[A-Z0-9_]+$")) then
      die(bw, "'setup' must be an upper-case C identifier")
    end
    bench_ids[b.id], bench_keys[b.key] = true, true
  end
end

-- ---------------------------------------------------------------------------
-- Output helpers

local function write_if_changed(path, content)
  local f = io.open(path, "rb")
  if f then
    local old = f:read("*a")
    f:close()
    if old == content then return end
  end
  local tmp = path .. ".tmp"
  f = io.open(tmp, "wb")
  if not f then die(path, "cannot write '" .. tmp .. "'") end
  f:write(content)
  f:close()
  local okr, e = os.rename(tmp, path)
  if not okr then die(path, e) end
end

local function flag(o) return "O_" .. o:upper():gsub("-", "_") end
local function flags(list)
  if not list or #list == 0 then return "0" end
  local t = {}
  for _, o in ipairs(list) do t[#t + 1] = flag(o) end
  return "(" .. table.concat(t, " | ") .. ")"
end
local function cstr(s) return '"' .. s .. '"' end

-- One X-macro: lines joined with backslashes.
local function xmacro(out, comment, name, rows)
  out[#out + 1] = comment
  if #rows == 0 then
    out[#out + 1] = "#define " .. name .. "(X)"
  else
    out[#out + 1] = "#define " .. name .. "(X) \\"
    for i, r in ipairs(rows) do out[#out + 1] = "  X(" .. r .. ")" .. (i < #rows and " \\" or "") end
  end
  out[#out + 1] = ""
end

-- ---------------------------------------------------------------------------
-- ops.generated.h

local h = {
  "/* This is a generated file. DO NOT EDIT! (gen/opsgen.lua from gen/ops.lua) */",
  "/* The op registry as X-macro tables: each user defines X for the columns it",
  " * needs.  docs/adr/0017-op-registry.md describes them. */",
  "#ifndef NDF_OPS_GENERATED_H",
  "#define NDF_OPS_GENERATED_H",
  "",
  "#define NDF_OPS_COUNT " .. #reg.ops,
  "",
}

local all, cli, warm, bench = {}, {}, {}, {}
local tests = {} -- family -> rows
local warm_opts, warm_seen = {}, {}
for _, op in ipairs(reg.ops) do
  local fam = family_of[op.family]
  all[#all + 1] = string.format("%s, %s, %s, %d, %s", cstr(op.name), op.family, op.entry, op.composite and 1 or 0,
    cstr(op.doc))
  if op.cli then
    cli[#cli + 1] = string.format("%s, %s, %s, %s, %s, %s", op.cli.adapter, cstr(op.name), op.entry,
      flags(op.cli.options), flags(op.cli.required), cstr(op.doc))
  end
  local w = op.warm or fam.warm
  local wopts = op.cli and op.cli.options or op.warm_options
  if w and wopts then
    warm[#warm + 1] = string.format("%s, %s, %s", cstr(op.name), w, flags(wopts))
    for _, o in ipairs(wopts) do
      if not warm_seen[o] then
        warm_seen[o] = true
        warm_opts[#warm_opts + 1] = o
      end
    end
  end
  do
    local short = op.test or op.name
    tests[op.family] = tests[op.family] or {}
    local rows = tests[op.family]
    rows[#rows + 1] = string.format("%s, %s, %s, %s, %d", short:upper(), cstr(op.name), cstr(short), op.entry,
      op.composite and 1 or 0)
  end
  for _, b in ipairs(op.bench or {}) do
    bench[#bench + 1] = string.format("%s, %s, %s, %s", b.id, cstr(b.arg or op.name), cstr(b.key),
      b.setup or op.family:upper())
  end
end

xmacro(h, "/* Every op: X(name, family, entry, composite, doc). */", "NDF_OPS", all)
xmacro(h, table.concat({
  "/* The ops of `ndforge run`, in the order its help lists them:",
  " * X(adapter, name, entry, options, required, doc); options and required are",
  " * ORs of the CLI's O_<OPTION> flags (--batch-dims: O_BATCH_DIMS), 0 for none. */" }, "\n"),
  "NDF_OPS_CLI", cli)
xmacro(h, table.concat({
  "/* The ops `ndforge cache warm` compiles kernels for: X(name, warm, options),",
  " * warm naming the CLI's warm function (warm_<warm>), options the O_* flags it takes",
  " * (an op of `run`: the same as there). */" }, "\n"), "NDF_OPS_WARM", warm)
h[#h + 1] = "/* Every option of the ops of NDF_OPS_WARM (what `cache warm` parses). */"
h[#h + 1] = "#define NDF_OPS_WARM_OPTIONS " .. flags(warm_opts)
h[#h + 1] = ""
for _, f in ipairs(families) do
  if tests[f.name] then
    xmacro(h, string.format("/* The %s ops: X(ID, name, short name, entry, composite); the short name is the\n" ..
      " * tests' (the oracle's manifest), else the name; ID is the short name in capitals. */", f.name),
      "NDF_OPS_" .. f.name:upper(), tests[f.name])
  end
end
xmacro(h, "/* The benchmark's workload kinds: X(ID, --op name, key, setup family). */", "NDF_OPS_BENCH", bench)
h[#h + 1] = "#endif /* NDF_OPS_GENERATED_H */"
write_if_changed(outdir .. "/ops.generated.h", table.concat(h, "\n") .. "\n")

-- ---------------------------------------------------------------------------
-- ops.json: one object; strings hold no characters that need escaping (checked above).

local function jstr(s) return '"' .. s .. '"' end
local function jlist(list)
  local t = {}
  for _, v in ipairs(list or {}) do t[#t + 1] = jstr(v) end
  return "[" .. table.concat(t, ", ") .. "]"
end
local j = { "{", '  "format": "ndforge-ops",', '  "version": 1,', '  "families": [' }
for i, f in ipairs(families) do
  j[#j + 1] = string.format('    {"name": %s, "doc": %s, "warm": %s}%s', jstr(f.name), jstr(f.doc),
    f.warm and "true" or "false", i < #families and "," or "")
end
j[#j + 1] = "  ],"
j[#j + 1] = '  "ops": ['
for i, op in ipairs(reg.ops) do
  local fam = family_of[op.family]
  local fields = {
    '"name": ' .. jstr(op.name),
    '"family": ' .. jstr(op.family),
    '"entry": ' .. jstr(op.entry),
    '"doc": ' .. jstr(op.doc),
    '"composite": ' .. (op.composite and "true" or "false"),
    '"command": ' .. (op.cli and jstr("run") or op.command and jstr(op.command) or "null"),
    '"options": ' .. (op.cli and jlist(op.cli.options) or "null"),
    '"warm_options": ' .. (((op.cli or op.warm_options) and (op.warm or fam.warm))
      and jlist(op.cli and op.cli.options or op.warm_options) or "null"),
    '"required": ' .. (op.cli and jlist(op.cli.required) or "null"),
    '"warm": ' .. (((op.cli or op.warm_options) and (op.warm or fam.warm)) and "true" or "false"),
    '"test": ' .. jstr(op.test or op.name),
  }
  local b = {}
  for _, k in ipairs(op.bench or {}) do b[#b + 1] = k.key end
  fields[#fields + 1] = '"bench": ' .. jlist(b)
  j[#j + 1] = "    {" .. table.concat(fields, ", ") .. "}" .. (i < #reg.ops and "," or "")
end
j[#j + 1] = "  ]"
j[#j + 1] = "}"
write_if_changed(outdir .. "/ops.json", table.concat(j, "\n") .. "\n")

-- ---------------------------------------------------------------------------
-- ops.md: the docs' op list.

local md = {
  "# Ops",
  "",
  "<!-- This is a generated file. DO NOT EDIT! gen/opsgen.lua writes it from gen/ops.lua;",
  "     `cmake --build build --target ops_doc` copies it here, the test ops_doc compares. -->",
  "",
  "Every op of ndforge, by family, as the op registry (`gen/ops.lua`) lists them.",
  "*Command* is how the `ndforge` command runs it (`run` is `ndforge run OP`);",
  "*warm* says whether `ndforge cache warm OP` compiles its kernels ahead of time;",
  "*composite* ops are composed on the host from other ops' kernels.",
}
for _, f in ipairs(families) do
  md[#md + 1] = ""
  md[#md + 1] = "## " .. f.name
  md[#md + 1] = ""
  md[#md + 1] = f.doc:sub(1, 1):upper() .. f.doc:sub(2) .. "."
  md[#md + 1] = ""
  md[#md + 1] = "| op | C function | command | warm | what it computes |"
  md[#md + 1] = "|---|---|---|---|---|"
  for _, op in ipairs(reg.ops) do
    if op.family == f.name then
      local command = op.cli and "`run`" or op.command and ("`" .. op.command .. "`") or "API only"
      local warmable = ((op.cli or op.warm_options) and (op.warm or f.warm)) and "yes" or "no"
      md[#md + 1] = string.format("| `%s`%s | `%s` | %s | %s | %s |", op.name, op.composite and " (composite)" or "",
        op.entry, command, warmable, op.doc:gsub("|", "\\|"))
    end
  end
end
write_if_changed(outdir .. "/ops.md", table.concat(md, "\n") .. "\n")
