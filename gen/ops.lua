-- ops.lua -- the op registry of ndforge: one entry per op.  Pure data:
-- opsgen.lua validates it and emits the C tables of the CLI, of `ndforge
-- cache warm`, of the tests and of the benchmark, the docs' op list
-- (docs/ops.md) and ops.json for the Python package (docs/adr/0017).
--
-- families: the op families, in the order the docs list them.
--   doc      one line for docs/ops.md
--   warm     how `ndforge cache warm` compiles the family's kernels without a
--            GPU: the name of a warm function of the CLI (tools/ndforge.c,
--            warm_<name>), which calls the family's public ndf_cache_warm_*
--            call; absent: the family's kernels compile on first use only
--
-- ops[i]:
--   name      the op's public name, as scipy (or the op's paper) and the CLI call it
--   family    a key of families
--   entry     the C entry point (include/ndforge.h)
--   doc       one line: what the op computes
--   cli       how `ndforge run` calls it: adapter (a call_<adapter> function of
--             tools/ndforge.c), options (the long options it takes besides
--             --device), required (those it cannot run without); absent: the
--             op has its own command (command = "ecc") or none (API only)
--   warm      the op's warm function when it is not its family's (see families)
--   warm_options  the options `ndforge cache warm` takes for an op without cli
--             (an op of `run` takes its cli.options there)
--   composite true for an op composed of other ops' kernels on the host
--   test      the short name the family's scipy oracle and test program use
--             (tests/oracle_grey.py's manifest); default the name.  The
--             family's table NDF_OPS_<FAMILY> names each op by it (ID: in
--             capitals): the grey ops' test dispatch (tests/testutil.c) and
--             their compositions (runtime/ops/grey/grey_compose.c) use it
--   bench     the workload kinds of bench/bench.c: id (its OP_ enum name),
--             key (the first part of a workload's name), arg (its --op name;
--             default the op's name), setup (the benchmark's FAM_ name when it
--             differs from the op's family)

-- The CLI options of each family (scipy's parameters).
local GREY = { "size", "footprint", "structure", "origin", "mode", "cval", "batch-dims", "algorithm" }
local RANK = { "size", "footprint", "origin", "mode", "cval", "batch-dims", "nan-policy", "algorithm" }
local BINARY = { "structure", "iterations", "mask", "border-value", "origin", "brute-force", "batch-dims" }

local function with(list, ...)
  local t = {}
  for _, v in ipairs(list) do t[#t + 1] = v end
  for _, v in ipairs({ ... }) do t[#t + 1] = v end
  return t
end

return {
  families = {
    { name = "grey", doc = "grey-scale morphology (flat and non-flat elements); the output has the input's dtype",
      warm = "grey" },
    { name = "rank", doc = "rank filters over a footprint; the output has the input's dtype", warm = "rank" },
    { name = "binary", doc = "binary morphology on packed bit words; the output is bool", warm = "binary" },
    { name = "label", doc = "connected-component labelling", warm = "label" },
    { name = "distance", doc = "distance transforms to the nearest background voxel", warm = "distance" },
    { name = "ecc", doc = "Euler characteristic curves of sublevel-set filtrations (cubical complexes)" },
    { name = "ect", doc = "Euler characteristic transforms (directional curves)", warm = "ect" },
    { name = "sinkhorn", doc = "entropic optimal transport between histograms" },
  },

  ops = {
    -- grey morphology
    { name = "grey_erosion", family = "grey", entry = "ndf_grey_erosion",
      doc = "grey-scale erosion (minimum over the structuring element)",
      cli = { adapter = "grey", options = GREY }, test = "erosion",
      bench = { { id = "EROSION", key = "erosion" } } },
    { name = "grey_dilation", family = "grey", entry = "ndf_grey_dilation",
      doc = "grey-scale dilation (maximum over the structuring element)",
      cli = { adapter = "grey", options = GREY }, test = "dilation",
      bench = { { id = "DILATION", key = "dilation" } } },
    { name = "grey_opening", family = "grey", entry = "ndf_grey_opening", composite = true,
      doc = "dilation of the erosion",
      cli = { adapter = "grey", options = GREY }, test = "opening",
      bench = { { id = "OPENING", key = "opening" } } },
    { name = "grey_closing", family = "grey", entry = "ndf_grey_closing", composite = true,
      doc = "erosion of the dilation",
      cli = { adapter = "grey", options = GREY }, test = "closing" },
    { name = "morphological_gradient", family = "grey", entry = "ndf_morphological_gradient", composite = true,
      doc = "dilation - erosion",
      cli = { adapter = "grey", options = GREY }, test = "gradient" },
    { name = "morphological_laplace", family = "grey", entry = "ndf_morphological_laplace", composite = true,
      doc = "dilation + erosion - input - input (in this order)",
      cli = { adapter = "grey", options = GREY }, test = "laplace" },
    { name = "white_tophat", family = "grey", entry = "ndf_white_tophat", composite = true,
      doc = "input - opening",
      cli = { adapter = "grey", options = GREY }, test = "white_tophat" },
    { name = "black_tophat", family = "grey", entry = "ndf_black_tophat", composite = true,
      doc = "closing - input",
      cli = { adapter = "grey", options = GREY }, test = "black_tophat" },

    -- rank filters
    { name = "median_filter", family = "rank", entry = "ndf_median_filter",
      doc = "element n//2 of the sorted window of n values",
      cli = { adapter = "median", options = RANK },
      bench = { { id = "MEDIAN", key = "median" } } },
    { name = "rank_filter", family = "rank", entry = "ndf_rank_filter",
      doc = "element --rank of the sorted window",
      cli = { adapter = "rank", options = with(RANK, "rank"), required = { "rank" } },
      bench = { { id = "RANK", key = "rank" } } },
    { name = "percentile_filter", family = "rank", entry = "ndf_percentile_filter",
      doc = "element int(n * P / 100) of the sorted window",
      cli = { adapter = "percentile", options = with(RANK, "percentile"), required = { "percentile" } },
      bench = { { id = "PERCENTILE", key = "percentile" } } },

    -- binary morphology
    { name = "binary_erosion", family = "binary", entry = "ndf_binary_erosion",
      doc = "true where the structure fits in the foreground",
      cli = { adapter = "binary", options = BINARY },
      bench = { { id = "BIN_EROSION", key = "binary_erosion" } } },
    { name = "binary_dilation", family = "binary", entry = "ndf_binary_dilation",
      doc = "the foreground grown by the (reflected) structure",
      cli = { adapter = "binary", options = BINARY } },
    { name = "binary_opening", family = "binary", entry = "ndf_binary_opening", composite = true,
      doc = "binary dilation of the binary erosion",
      cli = { adapter = "binary", options = BINARY } },
    { name = "binary_closing", family = "binary", entry = "ndf_binary_closing", composite = true,
      doc = "binary erosion of the binary dilation",
      cli = { adapter = "binary", options = BINARY } },
    { name = "binary_propagation", family = "binary", entry = "ndf_binary_propagation",
      doc = "dilation until nothing changes (inside --mask)",
      cli = { adapter = "binary", options = { "structure", "mask", "border-value", "origin", "batch-dims" } } },
    { name = "binary_fill_holes", family = "binary", entry = "ndf_binary_fill_holes",
      doc = "fill the background not connected to the border",
      cli = { adapter = "binary", options = { "structure", "origin", "batch-dims" } },
      bench = { { id = "FILL_HOLES", key = "binary_fill_holes" } } },
    { name = "binary_hit_or_miss", family = "binary", entry = "ndf_binary_hit_or_miss",
      doc = "structure1 fits in the input, structure2 outside it",
      cli = { adapter = "hit_or_miss", options = { "structure1", "structure2", "origin1", "origin2", "batch-dims" } },
      warm = "hit_or_miss" },

    -- labelling
    { name = "label", family = "label", entry = "ndf_label",
      doc = "number the connected features 1..N (prints num_features)",
      cli = { adapter = "label", options = { "structure", "batch-dims", "output-dtype" } },
      bench = { { id = "LABEL", key = "label" } } },

    -- distance transforms
    { name = "distance_transform_edt", family = "distance", entry = "ndf_distance_transform_edt",
      doc = "exact Euclidean distance to the nearest zero (float64; --indices)",
      cli = { adapter = "edt", options = { "sampling", "indices", "output-dtype", "batch-dims" } },
      bench = { { id = "EDT", key = "edt" } } },
    { name = "distance_transform_cdt", family = "distance", entry = "ndf_distance_transform_cdt",
      doc = "chamfer distance, chessboard/taxicab or --structure (int32, -1 unreachable)",
      cli = { adapter = "cdt", options = { "metric", "structure", "indices", "batch-dims" } },
      bench = { { id = "CDT_TAXI", key = "cdt_taxicab" }, { id = "CDT_CHESS", key = "cdt_chessboard" } } },
    { name = "distance_transform_bf", family = "distance", entry = "ndf_distance_transform_bf",
      doc = "brute-force distance (float64 euclidean, uint32 taxicab/chessboard)",
      cli = { adapter = "bf", options = { "metric", "sampling", "indices", "batch-dims" } },
      bench = { { id = "BF", key = "bf" } } },

    -- Euler characteristic curves and transforms (commands of their own)
    { name = "euler_characteristic_curve", family = "ecc", entry = "ndf_euler_characteristic_curve",
      doc = "Euler characteristic curve chi(t) of {f <= t} at T thresholds (int64)",
      command = "ecc",
      bench = { { id = "ECC", key = "ecc" } } },
    { name = "soft_ecc", family = "ecc", entry = "ndf_soft_ecc_forward",
      doc = "differentiable (sigmoid-smoothed) Euler characteristic curve, forward and backward",
      bench = { { id = "SOFT_ECC", key = "soft_ecc", setup = "SOFT_ECC" } } },
    { name = "euler_characteristic_transform", family = "ect", entry = "ndf_euler_characteristic_transform",
      doc = "Euler characteristic curves of the height functions along m directions",
      command = "ect", warm_options = { "construction", "weighted", "batch-dims" },
      bench = { { id = "ECT", key = "ect" } } },
    { name = "soft_ect", family = "ect", entry = "ndf_soft_ect_forward",
      doc = "differentiable Euler characteristic transform, forward and backward",
      warm_options = { "construction", "weighted", "batch-dims" },
      bench = { { id = "SOFT_ECT", key = "soft_ect", setup = "SOFT_ECT" } } },

    -- entropic optimal transport
    { name = "sinkhorn", family = "sinkhorn", entry = "ndf_sinkhorn_solve",
      doc = "entropic OT costs between pairs of histograms (Sinkhorn iterations)",
      command = "sinkhorn",
      bench = { { id = "SINKHORN", key = "sinkhorn" },
                { id = "SINKHORN_LOG", key = "sinkhorn_log", arg = "sinkhorn_log" },
                { id = "SINKHORN_DENSE", key = "sinkhorn_dense", arg = "sinkhorn_dense" } } },
  },
}
