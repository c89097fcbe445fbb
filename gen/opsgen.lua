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
  if f.nowarm ~= nil and not is_line(f.nowarm) then die(where, "'nowarm' must be one line (the reason)") end
  if f.warm and f.nowarm then die(where, "'warm' and 'nowarm' exclude each other") end
  families[#families + 1] = f
  family_of[f.name] = f
end

local KEYS = { name = 1, family = 1, entry = 1, doc = 1, cli = 1, command = 1, composite = 1, test = 1, bench = 1,
  warm = 1, warm_options = 1, nowarm = 1, inputs = 1, params = 1, outputs = 1 }

-- The dtype names of ndforge.h (ndf_dtype_name), and "input": the (first) input's dtype.
local DTYPES = { bool = 1, uint8 = 1, int8 = 1, uint16 = 1, int16 = 1, uint32 = 1, int32 = 1, int64 = 1, uint64 = 1,
  float32 = 1, float64 = 1 }
local PARAM_TYPES = { bool = "boolean", int = "number", float = "number", enum = "string", string = "string",
  array = false }
local OUTPUT_KINDS = { array = 1, scalar = 1, per_image = 1 }

-- A field's keys must be among those allowed (a misspelt key is an error, not a silent default).
local function check_keys(where, t, allowed)
  if type(t) ~= "table" then die(where, "must be a table") end
  for k in pairs(t) do
    if not allowed[k] then die(where, "unknown key '" .. tostring(k) .. "'") end
  end
end
local function check_dtypes(where, d, allow_input)
  local list = type(d) == "table" and d or { d }
  if #list == 0 then die(where, "'dtype(s)' is an empty list") end
  for _, t in ipairs(list) do
    if not (DTYPES[t] or (allow_input and t == "input")) then
      die(where, "'" .. tostring(t) .. "' is not a dtype name (" .. (allow_input and "\"input\", " or "") ..
        "uint8, float64, ...)")
    end
  end
end

-- inputs / params / outputs: a list of named tables (an op's, else its family's).
local function check_named_list(where, list, what, check_one)
  if type(list) ~= "table" or #list == 0 then die(where, "'" .. what .. "' must be a non-empty list") end
  local seen = {}
  for j, e in ipairs(list) do
    local w = string.format("%s: %s[%d]", where, what, j)
    if type(e) ~= "table" or not is_ident(e.name) then die(w, "'name' must be an identifier") end
    if seen[e.name] then die(w, "name '" .. e.name .. "' used twice") end
    seen[e.name] = true
    if e.doc ~= nil and not is_line(e.doc) then die(w, "'doc' must be one line without quotes or backslashes") end
    if e.optional ~= nil and type(e.optional) ~= "boolean" then die(w, "'optional' must be a boolean") end
    check_one(w, e, j)
  end
end
local function check_inputs(where, list)
  check_named_list(where, list, "inputs", function(w, e)
    check_keys(w, e, { name = 1, doc = 1, optional = 1, dtypes = 1, cli = 1 })
    if e.dtypes ~= nil then check_dtypes(w, e.dtypes, false) end
    if e.cli ~= nil and not (type(e.cli) == "string" and e.cli:match("^[a-z][a-z0-9-]*$")) then
      die(w, "'cli' must be the CLI option that names its file (mask)")
    end
  end)
end
local function check_params(where, list)
  check_named_list(where, list, "params", function(w, e)
    check_keys(w, e, { name = 1, doc = 1, optional = 1, type = 1, per_axis = 1, values = 1, default = 1, required = 1 })
    if PARAM_TYPES[e.type] == nil then
      die(w, "'type' must be bool, int, float, enum, string or array")
    end
    if e.per_axis ~= nil and (type(e.per_axis) ~= "boolean" or (e.type ~= "int" and e.type ~= "float")) then
      die(w, "'per_axis' (one value, or one per spatial axis) is a boolean for int and float params")
    end
    if e.type == "enum" then
      if type(e.values) ~= "table" or #e.values == 0 then die(w, "an enum needs 'values'") end
      for _, v in ipairs(e.values) do
        if type(v) ~= "string" or not v:match("^[%a_][%w_-]*$") then
          die(w, "'values': '" .. tostring(v) .. "' is not a name such as grid-wrap")
        end
      end
    elseif e.values ~= nil then
      die(w, "'values' is for enums")
    end
    if e.required ~= nil and type(e.required) ~= "boolean" then die(w, "'required' must be a boolean") end
    if e.default ~= nil then
      if e.required then die(w, "a required param has no 'default'") end
      if e.type == "array" or type(e.default) ~= PARAM_TYPES[e.type] then
        die(w, "'default' must be a " .. e.type .. " value")
      end
      if e.type == "int" and math.type and math.type(e.default) ~= "integer" and e.default % 1 ~= 0 then
        die(w, "'default' must be an integer")
      end
      if e.type == "enum" then
        local ok = false
        for _, v in ipairs(e.values) do ok = ok or v == e.default end
        if not ok then die(w, "'default' is not one of 'values'") end
      end
      if type(e.default) == "string" and not is_line(e.default) then die(w, "'default' must be one line") end
    end
  end)
end
local function check_outputs(where, list)
  check_named_list(where, list, "outputs", function(w, e)
    check_keys(w, e, { name = 1, doc = 1, optional = 1, kind = 1, dtype = 1, shape = 1 })
    if e.kind ~= nil and not OUTPUT_KINDS[e.kind] then die(w, "'kind' must be array, scalar or per_image") end
    if e.dtype == nil then die(w, "'dtype' is required") end
    check_dtypes(w, e.dtype, true)
    if e.shape ~= nil then
      if (e.kind or "array") ~= "array" then die(w, "'shape' is for arrays") end
      if not is_line(e.shape) then die(w, "'shape' must be one line") end
    end
  end)
end
for _, f in ipairs(families) do
  local where = "family '" .. f.name .. "'"
  check_keys(where, f, { name = 1, doc = 1, warm = 1, nowarm = 1, inputs = 1, params = 1, outputs = 1 })
  if f.inputs ~= nil then check_inputs(where, f.inputs) end
  if f.params ~= nil then check_params(where, f.params) end
  if f.outputs ~= nil then check_outputs(where, f.outputs) end
end

-- What an op inherits from its family.
local DEFAULT_INPUTS = { { name = "input" } }
local function inputs_of(op) return op.inputs or family_of[op.family].inputs or DEFAULT_INPUTS end
local function params_of(op) return op.params or family_of[op.family].params end
local function outputs_of(op) return op.outputs or family_of[op.family].outputs end
local function warm_of(op)
  if op.warm then return op.warm end
  if op.nowarm then return nil end
  return family_of[op.family].warm
end
local function nowarm_of(op)
  if warm_of(op) then return nil end
  return op.nowarm or family_of[op.family].nowarm
end
-- The CLI options that name an input's file (--mask): `run` reads them, `cache warm` does not.
local function input_options(op)
  local t = {}
  for j, i in ipairs(inputs_of(op)) do
    if j > 1 and i.cli then t[i.cli] = true end
  end
  return t
end
local function without(list, drop)
  local t = {}
  for _, o in ipairs(list or {}) do
    if not drop[o] then t[#t + 1] = o end
  end
  return t
end
-- The options `cache warm` takes for op and those it requires (nil: op is not warmed).
local function warm_options_of(op)
  if not warm_of(op) then return nil end
  if op.warm_options then return op.warm_options, {} end
  if not op.cli then return nil end
  local drop = input_options(op)
  return without(op.cli.options, drop), without(op.cli.required, drop)
end
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
  if op.nowarm ~= nil and not is_line(op.nowarm) then die(where, "'nowarm' must be one line (the reason)") end
  if op.warm and op.nowarm then die(where, "'warm' and 'nowarm' exclude each other") end
  if op.inputs ~= nil then check_inputs(where, op.inputs) end
  if op.params ~= nil then check_params(where, op.params) end
  if op.outputs ~= nil then check_outputs(where, op.outputs) end
  if not outputs_of(op) then die(where, "no 'outputs' (neither the op's nor its family's)") end
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
    for j, i in ipairs(inputs_of(op)) do
      if j == 1 and i.cli then die(where, "inputs[1] is the CLI's INPUT: it takes no 'cli' option") end
      if j > 1 and not i.cli then die(where, "input '" .. i.name .. "': 'cli' must name the option of its file") end
      if i.cli and not seen[i.cli] then die(where, "input '" .. i.name .. "': --" .. i.cli .. " is not in cli.options") end
    end
  end
  -- Every op is warmed by `ndforge cache warm`, or says why not.
  if warm_of(op) then
    if not warm_options_of(op) then
      die(where, "cache warm needs its options: 'cli' or 'warm_options' (an empty list for none)")
    end
  elseif not nowarm_of(op) then
    die(where, "neither 'warm' nor 'nowarm' (the reason `cache warm` cannot compile its kernels), here or in its family")
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

local all, cli, warm, nowarm, bench = {}, {}, {}, {}, {}
local tests = {} -- family -> rows
local warm_opts, warm_seen = {}, {}
for _, op in ipairs(reg.ops) do
  all[#all + 1] = string.format("%s, %s, %s, %d, %s", cstr(op.name), op.family, op.entry, op.composite and 1 or 0,
    cstr(op.doc))
  if op.cli then
    cli[#cli + 1] = string.format("%s, %s, %s, %s, %s, %s", op.cli.adapter, cstr(op.name), op.entry,
      flags(op.cli.options), flags(op.cli.required), cstr(op.doc))
  end
  local w = warm_of(op)
  local wopts, wreq = warm_options_of(op)
  if w then
    warm[#warm + 1] = string.format("%s, %s, %s, %s", cstr(op.name), w, flags(wopts), flags(wreq))
    for _, o in ipairs(wopts) do
      if not warm_seen[o] then
        warm_seen[o] = true
        warm_opts[#warm_opts + 1] = o
      end
    end
  end
  if not w then nowarm[#nowarm + 1] = string.format("%s, %s", cstr(op.name), cstr(nowarm_of(op))) end
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
  "/* The ops `ndforge cache warm` compiles kernels for: X(name, warm, options, required),",
  " * warm naming the CLI's warm function (warm_<warm>), options the O_* flags it takes and",
  " * required those it needs (an op of `run`: its own, less the files of its inputs). */" }, "\n"),
  "NDF_OPS_WARM", warm)
xmacro(h, "/* The ops `ndforge cache warm` cannot warm, and why: X(name, reason). */", "NDF_OPS_NOWARM", nowarm)
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
-- A value of the registry: strings, numbers, booleans, lists, and tables written with keys in
-- the order given (nil values left out).
local function jval(v)
  if type(v) == "string" then return jstr(v) end
  if type(v) == "boolean" then return v and "true" or "false" end
  if type(v) == "number" then
    if v % 1 == 0 and v > -2 ^ 53 and v < 2 ^ 53 then return string.format("%d", v) end
    return string.format("%.17g", v)
  end
  local t = {}
  for _, x in ipairs(v) do t[#t + 1] = jval(x) end
  return "[" .. table.concat(t, ", ") .. "]"
end
local function jobj(t, keys)
  local f = {}
  for _, k in ipairs(keys) do
    if t[k] ~= nil then f[#f + 1] = jstr(k) .. ": " .. jval(t[k]) end
  end
  return "{" .. table.concat(f, ", ") .. "}"
end
local function jobjs(list, keys)
  if not list then return "null" end
  local t = {}
  for _, e in ipairs(list) do t[#t + 1] = jobj(e, keys) end
  return "[" .. table.concat(t, ", ") .. "]"
end
local INPUT_KEYS = { "name", "doc", "optional", "dtypes", "cli" }
local PARAM_KEYS = { "name", "doc", "type", "per_axis", "values", "default", "required", "optional" }
local OUTPUT_KEYS = { "name", "doc", "kind", "dtype", "shape", "optional" }
local function with_kind(list)
  local t = {}
  for _, o in ipairs(list) do
    local c = {}
    for k, v in pairs(o) do c[k] = v end
    c.kind = c.kind or "array"
    if c.kind == "array" then c.shape = c.shape or "input" end
    t[#t + 1] = c
  end
  return t
end

local j = { "{", '  "format": "ndforge-ops",', '  "version": 1,', '  "families": [' }
for i, f in ipairs(families) do
  j[#j + 1] = string.format('    {"name": %s, "doc": %s, "warm": %s}%s', jstr(f.name), jstr(f.doc),
    f.warm and "true" or "false", i < #families and "," or "")
end
j[#j + 1] = "  ],"
j[#j + 1] = '  "ops": ['
for i, op in ipairs(reg.ops) do
  local wopts = warm_options_of(op)
  local fields = {
    '"name": ' .. jstr(op.name),
    '"family": ' .. jstr(op.family),
    '"entry": ' .. jstr(op.entry),
    '"doc": ' .. jstr(op.doc),
    '"composite": ' .. (op.composite and "true" or "false"),
    '"command": ' .. (op.cli and jstr("run") or op.command and jstr(op.command) or "null"),
    '"options": ' .. (op.cli and jlist(op.cli.options) or "null"),
    '"warm_options": ' .. (wopts and jlist(wopts) or "null"),
    '"required": ' .. (op.cli and jlist(op.cli.required) or "null"),
    '"warm": ' .. (wopts and "true" or "false"),
    '"nowarm": ' .. (nowarm_of(op) and jstr(nowarm_of(op)) or "null"),
    '"test": ' .. jstr(op.test or op.name),
    '"inputs": ' .. jobjs(inputs_of(op), INPUT_KEYS),
    '"params": ' .. jobjs(params_of(op), PARAM_KEYS),
    '"outputs": ' .. jobjs(with_kind(outputs_of(op)), OUTPUT_KEYS),
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
      local warmable = warm_of(op) and "yes" or "no"
      md[#md + 1] = string.format("| `%s`%s | `%s` | %s | %s | %s |", op.name, op.composite and " (composite)" or "",
        op.entry, command, warmable, op.doc:gsub("|", "\\|"))
    end
  end
  -- The deliberate exceptions of `cache warm`, with their reasons.
  local why, order = {}, {}
  for _, op in ipairs(reg.ops) do
    local r = op.family == f.name and nowarm_of(op)
    if r then
      if not why[r] then
        why[r] = {}
        order[#order + 1] = r
      end
      why[r][#why[r] + 1] = "`" .. op.name .. "`"
    end
  end
  for _, r in ipairs(order) do
    md[#md + 1] = ""
    md[#md + 1] = "Not warmed (" .. table.concat(why[r], ", ") .. "): " .. r .. "."
  end
end
write_if_changed(outdir .. "/ops.md", table.concat(md, "\n") .. "\n")
