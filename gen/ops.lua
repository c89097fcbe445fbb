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
--            call
--   nowarm   instead of warm: why the family's kernels cannot be compiled
--            ahead of time (one line; the CLI prints it, docs/ops.md lists it).
--            Every op is warmed or has a reason: opsgen.lua rejects an op
--            with neither
--   inputs, params, outputs  the defaults of the family's ops (below)
--
-- ops[i]:
--   name      the op's public name, as scipy (or the op's paper) and the CLI call it
--   family    a key of families
--   entry     the C entry point (include/ndforge.h)
--   doc       one line: what the op computes
--   inputs    its array arguments in the order of the C call; default the
--             family's, else one, { name = "input" }.  Each:
--               name      the argument's name (scipy's: input, seed, mask)
--               dtypes    the dtypes it accepts, e.g. { "float32", "float64" }
--                         (absent: those ndforge.h documents for the family)
--               optional  true when the call takes NULL
--               cli       for inputs after the first: the CLI option naming
--                         its file (the first is `run`'s INPUT); `cache warm`
--                         does not take it
--               doc       one line
--   params    its other arguments (the options struct's fields, Python's
--             keyword arguments), in the reference's order; absent (null in
--             ops.json): not described here yet, ndforge.h has them.  Each:
--               name      the reference's name (sigma, mode, offset)
--               type      bool, int, float, enum, string, or array (a small
--                         host array such as a footprint)
--               per_axis  int / float: one value for every spatial axis, or
--                         one per axis (sigma, size, origin)
--               values    enum: its names
--               default   the reference's default (absent: none, or NULL)
--               required  true when the call cannot run without it
--               doc       one line
--   outputs   its results, in the order of the C call; default the family's.
--             Each:
--               name      the result's name (output, distances, num_features)
--               kind      array (default), scalar (one value: a metric such
--                         as psnr) or per_image (one value per image of the
--                         batch: label's num_features)
--               dtype     a dtype name, "input" (the first input's dtype), or
--                         a list of those: the dtypes allowed, the first the
--                         default (edt: { "float64", "float32" })
--               shape     arrays: "input" (default: the first input's shape)
--                         or one line saying it ("(batch..., m, T)", "the
--                         zoomed shape")
--               optional  true when the caller may leave it out (NULL)
--               doc       one line
--   cli       how `ndforge run` calls it: adapter (a call_<adapter> function of
--             tools/ndforge.c), options (the long options it takes besides
--             --device), required (those it cannot run without); absent: the
--             op has its own command (command = "ecc") or none (API only)
--   command   the `ndforge` command that runs an op without cli (ecc, ect)
--   warm      the op's warm function when it is not its family's (see families)
--   nowarm    why the op is not warmed when its family is (see families)
--   warm_options  the options `ndforge cache warm` takes for an op without cli
--             (an op of `run` takes its cli.options there, less its inputs')
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
--
-- An entry of another kind, for instance a Gaussian filter:
--   { name = "gaussian_filter", family = "filters", entry = "ndf_gaussian_filter",
--     doc = "Gaussian filter (separable)",
--     params = { { name = "sigma", type = "float", per_axis = true, required = true },
--                { name = "order", type = "int", per_axis = true, default = 0 },
--                { name = "mode", type = "enum", values = MODES, default = "reflect" },
--                { name = "truncate", type = "float", default = 4.0 } },
--     outputs = { { name = "output", dtype = { "input", "float32", "float64" } } },
--     cli = { adapter = "gaussian", options = { "sigma", "order", "mode", "cval", "truncate", "batch-dims" },
--             required = { "sigma" } } }
-- and a metric: inputs = { { name = "image_true" }, { name = "image_test", cli = "reference" } },
-- outputs = { { name = "psnr", kind = "scalar", dtype = "float64" } }.

-- The CLI options of each family (scipy's parameters).
local GREY = { "size", "footprint", "structure", "origin", "mode", "cval", "batch-dims", "algorithm" }
local RANK = { "size", "footprint", "origin", "mode", "cval", "batch-dims", "nan-policy", "algorithm" }
local BINARY = { "structure", "iterations", "mask", "border-value", "origin", "brute-force", "batch-dims" }
-- The params of each family (scipy's parameters, then ndforge's own).
local MODES = { "reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-constant", "grid-wrap" }
local GREY_P = {
  { name = "size", type = "int", per_axis = true, doc = "a flat box element" },
  { name = "footprint", type = "array", doc = "a flat element: non-zero entries are in" },
  { name = "structure", type = "array", doc = "a non-flat element" },
  { name = "mode", type = "enum", values = MODES, default = "reflect" },
  { name = "cval", type = "float", default = 0.0 },
  { name = "origin", type = "int", per_axis = true, default = 0 },
  { name = "batch_dims", type = "int", default = 0 },
  { name = "algorithm", type = "enum", values = { "auto", "direct", "separable", "vhgw", "decomposed" },
    default = "auto" },
}
local function rank_params(first) -- first: the rank of rank_filter, the percentile of percentile_filter
  local t = { first }
  for _, p in ipairs({
    { name = "size", type = "int", per_axis = true, doc = "a box window" },
    { name = "footprint", type = "array", doc = "the window: non-zero entries are in" },
    { name = "mode", type = "enum", values = MODES, default = "reflect" },
    { name = "cval", type = "float", default = 0.0 },
    { name = "origin", type = "int", per_axis = true, default = 0 },
    { name = "batch_dims", type = "int", default = 0 },
    { name = "nan_policy", type = "enum", values = { "propagate", "omit" }, default = "propagate" },
    { name = "algorithm", type = "enum", values = { "auto", "network", "select", "histogram", "tile" },
      default = "auto" } }) do
    t[#t + 1] = p
  end
  return t
end
local SAMPLING = { name = "sampling", type = "float", per_axis = true, default = 1.0 }
local BATCH = { name = "batch_dims", type = "int", default = 0 }

-- The linear filters (scipy.ndimage): options and params shared by the family.
local FILTER = { "mode", "cval", "axes", "batch-dims", "output-dtype" }
local FILTER1D = { "axis", "mode", "cval", "batch-dims", "output-dtype" }
local F_MODE = { name = "mode", type = "enum", values = MODES, default = "reflect" }
local F_CVAL = { name = "cval", type = "float", default = 0.0 }
local F_ORIGIN = { name = "origin", type = "int", per_axis = true, default = 0 }
local F_AXES = { name = "axes", type = "int", per_axis = true, doc = "the filtered axes (default every spatial axis)" }
local F_AXIS = { name = "axis", type = "int", default = -1 }
local F_GAUSS = {
  { name = "sigma", type = "float", per_axis = true, required = true, doc = ">= 0" },
  { name = "order", type = "int", per_axis = true, default = 0, doc = "0 smooths, k > 0 the k-th derivative" },
  { name = "truncate", type = "float", default = 4.0 },
  { name = "radius", type = "int", per_axis = true, doc = "default int(truncate * sigma + 0.5)" },
}

-- The dtypes of the ops that take every numeric dtype but int64.
local NUMERIC = { "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64" }

local function with(list, ...)
  local t = {}
  for _, v in ipairs(list) do t[#t + 1] = v end
  for _, v in ipairs({ ... }) do t[#t + 1] = v end
  return t
end

return {
  families = {
    { name = "grey", doc = "grey-scale morphology (flat and non-flat elements); the output has the input's dtype",
      warm = "grey", params = GREY_P, outputs = { { name = "output", dtype = "input" } } },
    { name = "rank", doc = "rank filters over a footprint; the output has the input's dtype", warm = "rank",
      outputs = { { name = "output", dtype = "input" } } },
    { name = "binary", doc = "binary morphology on packed bit words; the output is bool", warm = "binary",
      outputs = { { name = "output", dtype = "bool" } } },
    { name = "label", doc = "connected-component labelling", warm = "label",
      params = { { name = "structure", type = "array", doc = "3 along each spatial axis, symmetric" }, BATCH },
      outputs = { { name = "output", dtype = { "int32", "uint8", "int8", "uint16", "int16", "uint32", "float32", "float64" } },
                  { name = "num_features", kind = "per_image", dtype = "int64", optional = true } } },
    { name = "distance", doc = "distance transforms to the nearest background voxel", warm = "distance" },
    { name = "ecc", doc = "Euler characteristic curves of sublevel-set filtrations (cubical complexes)",
      nowarm = "the CUDA path picks its kernels after reading the data (value range, strip or brick kernels and their fallbacks) and interleaves lookups with launches" },
    { name = "ect", doc = "Euler characteristic transforms (directional curves)", warm = "ect" },
    { name = "sinkhorn", doc = "entropic optimal transport between histograms",
      nowarm = "its kernels depend on the cost, the grid shape, the number of pairs and the device (cluster size), which are known when a solver is created (ndf_sinkhorn_create compiles them)",
      outputs = { { name = "transport_cost", dtype = "float64", shape = "(n,)", optional = true },
                  { name = "objective", dtype = "float64", shape = "(n,)", optional = true },
                  { name = "error", dtype = "float64", shape = "(n,)", optional = true },
                  { name = "iterations", dtype = "int32", shape = "(n,)", optional = true },
                  { name = "f", dtype = "float64", shape = "(n, d)", optional = true },
                  { name = "g", dtype = "float64", shape = "(n, d)", optional = true } } },
    { name = "reconstruction", doc = "grey morphological reconstruction (scikit-image's morphology.reconstruction)",
      warm = "reconstruction" },
    { name = "filters", doc = "linear filters (scipy.ndimage), computed in float64; the output has the input's dtype unless given",
      nowarm = "the correlation kernels compile their weights in (from sigma, truncate, radius and order, or the weights array), so a kernel is known only with those values; no warm call is written yet",
      outputs = { { name = "output", dtype = { "input", "uint8", "int8", "uint16", "int16", "uint32", "int32", "int64", "uint64", "float32", "float64" } } } },
    { name = "interp", doc = "B-spline interpolation (scipy.ndimage): spline filters and geometric transforms, orders 0 to 5",
      nowarm = "no ndf_cache_warm call for the interpolation kernels yet (they are specialized by order, mode, spatial rank, dtypes and transform kind)",
      outputs = { { name = "output", dtype = { "input", "uint8", "int8", "uint16", "int16", "uint32", "int32", "int64", "uint64",
                                               "float32", "float64", "bool" } } } },
    { name = "intensity", doc = "intensity statistics, windows and normalizations (NumPy / scikit-image), per image of a batch",
      nowarm = "the kernels are specialized by the dtype and the statistics the call needs (and histogram edges or equalize_hist bin counts read from the data), which only the call knows; no warm call is written yet",
      inputs = { { name = "input", dtypes = NUMERIC } },
      outputs = { { name = "output", dtype = { "float32", "float64" }, doc = "float32 unless --output-dtype" } } },
    { name = "metrics", doc = "image-quality and overlap metrics (scikit-image's skimage.metrics), one float64 value per image",
      nowarm = "the reductions are specialized by the two inputs' dtypes and the metric's options, and hausdorff_distance runs the distance transform on the data; no warm call is written yet",
      inputs = { { name = "image0", dtypes = with(NUMERIC, "bool") }, { name = "image1", dtypes = with(NUMERIC, "bool") } },
      outputs = { { name = "result", kind = "per_image", dtype = "float64" } } },
    { name = "preprocess", doc = "medical volumes with a voxel-to-world affine: orientation, spacing, crop, normalization (`ndforge preprocess`)",
      nowarm = "its steps run the interpolation and intensity kernels, which have no warm call yet" },
    { name = "bet", doc = "skull stripping of T1 brain MRI by FSL BET's surface model, and brain-mask helpers",
      warm = "skull_strip", outputs = { { name = "output", dtype = { "bool", "uint8" } } } },
    { name = "n4", doc = "N4 bias-field correction (Tustison et al. 2010; ITK's N4BiasFieldCorrectionImageFilter)",
      nowarm = "no ndf_cache_warm call for the N4 kernels yet (they are specialized by the input, weight and output dtypes)" },
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
      cli = { adapter = "median", options = RANK }, params = rank_params(),
      bench = { { id = "MEDIAN", key = "median" } } },
    { name = "rank_filter", family = "rank", entry = "ndf_rank_filter",
      doc = "element --rank of the sorted window",
      cli = { adapter = "rank", options = with(RANK, "rank"), required = { "rank" } },
      params = rank_params({ name = "rank", type = "int", required = true, doc = "negative counts from the end" }),
      bench = { { id = "RANK", key = "rank" } } },
    { name = "percentile_filter", family = "rank", entry = "ndf_percentile_filter",
      doc = "element int(n * P / 100) of the sorted window",
      cli = { adapter = "percentile", options = with(RANK, "percentile"), required = { "percentile" } },
      params = rank_params({ name = "percentile", type = "float", required = true, doc = "-100..100" }),
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
      outputs = { { name = "distances", dtype = { "float64", "float32" } },
                  { name = "indices", dtype = "int32", shape = "(spatial rank,) + shape, per image", optional = true } },
      params = { SAMPLING, BATCH },
      cli = { adapter = "edt", options = { "sampling", "indices", "output-dtype", "batch-dims" } },
      bench = { { id = "EDT", key = "edt" } } },
    { name = "distance_transform_cdt", family = "distance", entry = "ndf_distance_transform_cdt",
      doc = "chamfer distance, chessboard/taxicab or --structure (int32, -1 unreachable)",
      outputs = { { name = "distances", dtype = "int32" },
                  { name = "indices", dtype = "int32", shape = "(spatial rank,) + shape, per image", optional = true } },
      params = { { name = "metric", type = "enum", values = { "chessboard", "taxicab", "cityblock", "manhattan" },
                   default = "chessboard" },
                 { name = "metric_structure", type = "array", doc = "scipy's metric given as an array" }, BATCH },
      cli = { adapter = "cdt", options = { "metric", "structure", "indices", "batch-dims" } },
      bench = { { id = "CDT_TAXI", key = "cdt_taxicab" }, { id = "CDT_CHESS", key = "cdt_chessboard" } } },
    { name = "distance_transform_bf", family = "distance", entry = "ndf_distance_transform_bf",
      doc = "brute-force distance (float64 euclidean, uint32 taxicab/chessboard)",
      outputs = { { name = "distances", dtype = { "float64", "uint32" }, doc = "uint32 for taxicab and chessboard" },
                  { name = "indices", dtype = "int32", shape = "(spatial rank,) + shape, per image", optional = true } },
      params = { { name = "metric", type = "enum", values = { "euclidean", "taxicab", "chessboard" },
                   default = "euclidean" }, SAMPLING, BATCH },
      cli = { adapter = "bf", options = { "metric", "sampling", "indices", "batch-dims" } },
      bench = { { id = "BF", key = "bf" } } },
    { name = "distance_edt_pass", family = "distance", entry = "ndf_distance_edt_pass",
      doc = "one pass of distance_transform_edt along one axis, on a caller's state (squared distances, features)",
      inputs = { { name = "sqdist", dtypes = { "float64" }, doc = "in place: 0 on the background, +inf elsewhere before the first pass" },
                 { name = "features", dtypes = { "int64" }, optional = true, doc = "in place: the features' ids" } },
      outputs = { { name = "sqdist", dtype = "float64", doc = "the input, updated in place" } },
      params = { { name = "axis", type = "int", required = true, doc = "the axis of the lines" },
                 { name = "sampling", type = "float", default = 1.0, doc = "the spacing along axis" } },
      nowarm = "one small kernel per call shape, compiled at the first call (ndforge.dask's separable transform)" },

    -- Euler characteristic curves and transforms (commands of their own)
    { name = "euler_characteristic_curve", family = "ecc", entry = "ndf_euler_characteristic_curve",
      doc = "Euler characteristic curve chi(t) of {f <= t} at T thresholds (int64)",
      command = "ecc", outputs = { { name = "output", dtype = "int64", shape = "(batch..., T)" } },
      bench = { { id = "ECC", key = "ecc" } } },
    { name = "soft_ecc", family = "ecc", entry = "ndf_soft_ecc_forward",
      doc = "differentiable (sigmoid-smoothed) Euler characteristic curve, forward and backward",
      inputs = { { name = "input", dtypes = { "float32", "float64" } }, { name = "thresholds", dtypes = { "float64" } } },
      outputs = { { name = "output", dtype = "float64", shape = "(batch..., T)" } },
      bench = { { id = "SOFT_ECC", key = "soft_ecc", setup = "SOFT_ECC" } } },
    { name = "euler_characteristic_transform", family = "ect", entry = "ndf_euler_characteristic_transform",
      doc = "Euler characteristic curves of the height functions along m directions",
      command = "ect", warm_options = { "construction", "weighted", "batch-dims" },
      inputs = { { name = "input" }, { name = "directions", dtypes = { "float64" } } },
      outputs = { { name = "output", dtype = { "int64", "float64" }, shape = "(batch..., m, T)", doc = "float64 weighted" } },
      bench = { { id = "ECT", key = "ect" } } },
    { name = "soft_ect", family = "ect", entry = "ndf_soft_ect_forward",
      doc = "differentiable Euler characteristic transform, forward and backward",
      warm_options = { "construction", "weighted", "batch-dims" },
      inputs = { { name = "input" }, { name = "directions", dtypes = { "float64" } },
                 { name = "thresholds", dtypes = { "float64" } } },
      outputs = { { name = "output", dtype = "float64", shape = "(batch..., m, T)" } },
      bench = { { id = "SOFT_ECT", key = "soft_ect", setup = "SOFT_ECT" } } },

    -- entropic optimal transport
    { name = "sinkhorn", family = "sinkhorn", entry = "ndf_sinkhorn_solve",
      doc = "entropic OT costs between pairs of histograms (Sinkhorn iterations)",
      inputs = { { name = "a", dtypes = { "float32", "float64" } }, { name = "b", dtypes = { "float32", "float64" } } },
      command = "sinkhorn",
      bench = { { id = "SINKHORN", key = "sinkhorn" },
                { id = "SINKHORN_LOG", key = "sinkhorn_log", arg = "sinkhorn_log" },
                { id = "SINKHORN_DENSE", key = "sinkhorn_dense", arg = "sinkhorn_dense" } } },

    -- grey reconstruction
    { name = "reconstruction", family = "reconstruction", entry = "ndf_reconstruction",
      doc = "limit of geodesic dilations of the seed under the mask (or erosions above it)",
      inputs = { { name = "seed", dtypes = NUMERIC }, { name = "mask", dtypes = NUMERIC, cli = "mask" } },
      params = { { name = "method", type = "enum", values = { "dilation", "erosion" }, default = "dilation" },
                 { name = "footprint", type = "array", doc = "default ones((3,) * spatial rank)" },
                 { name = "offset", type = "int", per_axis = true, doc = "default the footprint's centre" },
                 { name = "batch_dims", type = "int", default = 0 } },
      outputs = { { name = "output", dtype = { "float64", "input" } } },
      cli = { adapter = "reconstruction", options = { "mask", "method", "footprint", "offset", "batch-dims",
                                                      "output-dtype" }, required = { "mask" } } },

    -- linear filters (scipy.ndimage)
    { name = "gaussian_filter", family = "filters", entry = "ndf_gaussian_filter",
      doc = "Gaussian smoothing (or derivatives: --order) per axis",
      params = with(F_GAUSS, F_MODE, F_CVAL, F_AXES, BATCH),
      cli = { adapter = "filter", options = with(FILTER, "sigma", "order", "truncate", "radius"), required = { "sigma" } },
      bench = { { id = "GAUSSIAN", key = "gaussian" } } },
    { name = "gaussian_filter1d", family = "filters", entry = "ndf_gaussian_filter1d",
      doc = "Gaussian smoothing (or a derivative) along --axis",
      params = with(F_GAUSS, F_AXIS, F_MODE, F_CVAL, BATCH),
      cli = { adapter = "filter", options = with(FILTER1D, "sigma", "order", "truncate", "radius"), required = { "sigma" } } },
    { name = "gaussian_laplace", family = "filters", entry = "ndf_gaussian_laplace", composite = true,
      doc = "sum of the second Gaussian derivatives",
      params = with(F_GAUSS, F_MODE, F_CVAL, F_AXES, BATCH),
      cli = { adapter = "filter", options = with(FILTER, "sigma", "truncate", "radius"), required = { "sigma" } } },
    { name = "gaussian_gradient_magnitude", family = "filters", entry = "ndf_gaussian_gradient_magnitude", composite = true,
      doc = "norm of the Gaussian gradient",
      params = with(F_GAUSS, F_MODE, F_CVAL, F_AXES, BATCH),
      cli = { adapter = "filter", options = with(FILTER, "sigma", "truncate", "radius"), required = { "sigma" } } },
    { name = "uniform_filter", family = "filters", entry = "ndf_uniform_filter",
      doc = "mean over a box of --size (default 3)",
      params = { { name = "size", type = "int", per_axis = true, default = 3 }, F_MODE, F_CVAL, F_ORIGIN, F_AXES, BATCH },
      cli = { adapter = "filter", options = with(FILTER, "size", "origin") },
      bench = { { id = "UNIFORM", key = "uniform" } } },
    { name = "uniform_filter1d", family = "filters", entry = "ndf_uniform_filter1d",
      doc = "mean over --size values along --axis",
      params = { { name = "size", type = "int", required = true }, F_AXIS, F_MODE, F_CVAL, F_ORIGIN, BATCH },
      cli = { adapter = "filter", options = with(FILTER1D, "size", "origin") } },
    { name = "sobel", family = "filters", entry = "ndf_sobel", composite = true,
      doc = "Sobel derivative along --axis, smoothed across the others",
      params = { F_AXIS, F_MODE, F_CVAL, BATCH },
      cli = { adapter = "filter", options = FILTER1D } },
    { name = "prewitt", family = "filters", entry = "ndf_prewitt", composite = true,
      doc = "Prewitt derivative along --axis, averaged across the others",
      params = { F_AXIS, F_MODE, F_CVAL, BATCH },
      cli = { adapter = "filter", options = FILTER1D } },
    { name = "laplace", family = "filters", entry = "ndf_laplace", composite = true,
      doc = "sum of the second differences [1, -2, 1] per axis",
      params = { F_MODE, F_CVAL, F_AXES, BATCH },
      cli = { adapter = "filter", options = FILTER } },
    { name = "correlate", family = "filters", entry = "ndf_correlate",
      doc = "N-D correlation with --weights (one axis per filtered axis)",
      params = { { name = "weights", type = "array", required = true }, F_MODE, F_CVAL, F_ORIGIN, F_AXES, BATCH },
      cli = { adapter = "filter", options = with(FILTER, "weights", "origin"), required = { "weights" } } },
    { name = "convolve", family = "filters", entry = "ndf_convolve",
      doc = "N-D convolution with --weights",
      params = { { name = "weights", type = "array", required = true }, F_MODE, F_CVAL, F_ORIGIN, F_AXES, BATCH },
      cli = { adapter = "filter", options = with(FILTER, "weights", "origin"), required = { "weights" } } },
    { name = "correlate1d", family = "filters", entry = "ndf_correlate1d",
      doc = "1-D correlation with --weights along --axis",
      params = { { name = "weights", type = "array", required = true }, F_AXIS, F_MODE, F_CVAL, F_ORIGIN, BATCH },
      cli = { adapter = "filter", options = with(FILTER1D, "weights", "origin"), required = { "weights" } } },
    { name = "convolve1d", family = "filters", entry = "ndf_convolve1d",
      doc = "1-D convolution with --weights along --axis",
      params = { { name = "weights", type = "array", required = true }, F_AXIS, F_MODE, F_CVAL, F_ORIGIN, BATCH },
      cli = { adapter = "filter", options = with(FILTER1D, "weights", "origin"), required = { "weights" } } },
    -- interpolation: `ndforge run OP` through tools/cli_interp.c (its own options; `run resample` too)
    { name = "spline_filter1d", family = "interp", entry = "ndf_spline_filter1d", command = "run",
      doc = "B-spline coefficients along one axis (orders 0 to 5)" },
    { name = "spline_filter", family = "interp", entry = "ndf_spline_filter", command = "run",
      doc = "B-spline coefficients along every spatial axis (orders 2 to 5)" },
    { name = "map_coordinates", family = "interp", entry = "ndf_map_coordinates", command = "run",
      doc = "the input sampled at given coordinates (spline of order 0 to 5)",
      inputs = { { name = "input" }, { name = "coordinates" } },
      outputs = { { name = "output", dtype = { "input", "float32", "float64" }, shape = "(batch...) + coordinates.shape[1:]" } },
      bench = { { id = "MAP_COORDS", key = "map_coordinates" } } },
    { name = "affine_transform", family = "interp", entry = "ndf_affine_transform", command = "run",
      doc = "output point o sampled at input point matrix @ o + offset",
      outputs = { { name = "output", dtype = { "input", "float32", "float64" }, shape = "output_shape" } },
      bench = { { id = "AFFINE_ROT", key = "affine_rot" } } },
    { name = "shift", family = "interp", entry = "ndf_shift", command = "run",
      doc = "the input shifted by a (fractional) offset per axis" },
    { name = "zoom", family = "interp", entry = "ndf_zoom", command = "run",
      doc = "the input resampled by a factor per axis (grid_mode for pixel edges)",
      outputs = { { name = "output", dtype = { "input", "float32", "float64" }, shape = "round(shape * zoom)" } },
      bench = { { id = "ZOOM", key = "zoom" } } },
    { name = "rotate", family = "interp", entry = "ndf_rotate", command = "run",
      doc = "the input rotated in the plane of two axes (reshape to hold it all)",
      outputs = { { name = "output", dtype = { "input", "float32", "float64" }, shape = "the rotated plane" } } },

    -- intensity (NumPy / scikit-image): histogram and the percentiles write outputs of their own shape
    -- (the CLI adapter sizes them)
    { name = "histogram", family = "intensity", entry = "ndf_histogram",
      doc = "numpy.histogram per image: counts (int64; float64 with --weights or --density) and --edges-out",
      inputs = { { name = "a", dtypes = NUMERIC },
                 { name = "weights", dtypes = NUMERIC, optional = true, cli = "weights", doc = "shaped like a" } },
      params = { { name = "bins", type = "int", default = 10, doc = "equal-width bins (the CLI's --bins)" },
                 { name = "edges", type = "array", doc = "bin edges instead (numpy bins=array)" },
                 { name = "range", type = "array", doc = "(lo, hi); default each image's min and max" },
                 { name = "density", type = "bool", default = false }, BATCH },
      outputs = { { name = "hist", dtype = { "int64", "float64" }, shape = "(batch..., nbins)" },
                  { name = "bin_edges", dtype = "float64", shape = "(batch..., nbins + 1)", optional = true } },
      cli = { adapter = "intensity", options = { "bins", "edges", "range", "weights", "density", "edges-out", "batch-dims" } } },
    { name = "percentile", family = "intensity", entry = "ndf_percentile",
      doc = "numpy.percentile per image, method linear (float64)",
      params = { { name = "q", type = "array", required = true, doc = "one or more values in [0, 100]" }, BATCH },
      outputs = { { name = "output", dtype = "float64", shape = "(batch..., nq), or (batch...) for one q" } },
      cli = { adapter = "intensity", options = { "q", "batch-dims" }, required = { "q" } } },
    { name = "quantile", family = "intensity", entry = "ndf_quantile",
      doc = "numpy.quantile per image, method linear (float64)",
      params = { { name = "q", type = "array", required = true, doc = "one or more values in [0, 1]" }, BATCH },
      outputs = { { name = "output", dtype = "float64", shape = "(batch..., nq), or (batch...) for one q" } },
      cli = { adapter = "intensity", options = { "q", "batch-dims" }, required = { "q" } } },
    { name = "clip", family = "intensity", entry = "ndf_clip",
      doc = "numpy.clip(x, lo, hi); NaN stays NaN",
      params = { { name = "lo", type = "float", required = true, doc = "numpy's a_min" },
                 { name = "hi", type = "float", required = true, doc = "numpy's a_max, >= lo" } },
      outputs = { { name = "output", dtype = { "input", "float32", "float64" } } },
      cli = { adapter = "intensity", options = { "lo", "hi", "output-dtype" }, required = { "lo", "hi" } } },
    { name = "window", family = "intensity", entry = "ndf_window",
      doc = "the window [lo, hi] mapped to [out_min, out_max] (values outside clipped)",
      params = { { name = "lo", type = "float", required = true }, { name = "hi", type = "float", required = true },
                 { name = "out_min", type = "float", default = 0.0 }, { name = "out_max", type = "float", default = 1.0 },
                 BATCH },
      cli = { adapter = "intensity", options = { "lo", "hi", "out-min", "out-max", "batch-dims", "output-dtype" },
              required = { "lo", "hi" } } },
    { name = "window_ct", family = "intensity", entry = "ndf_window_ct",
      doc = "a CT window by --preset (brain, lung, bone, ...) or --centre and --width, in Hounsfield units",
      params = { { name = "preset", type = "enum",
                   values = { "brain", "subdural", "stroke", "bone", "lung", "mediastinum", "soft_tissue", "liver" } },
                 { name = "centre", type = "float", doc = "the window level" },
                 { name = "width", type = "float", doc = ">= 0" },
                 { name = "out_min", type = "float", default = 0.0 }, { name = "out_max", type = "float", default = 1.0 },
                 BATCH },
      cli = { adapter = "intensity", options = { "preset", "centre", "width", "out-min", "out-max", "batch-dims",
                                                 "output-dtype" } } },
    { name = "normalize_minmax", family = "intensity", entry = "ndf_normalize_minmax",
      doc = "each image's [min, max] mapped to [out_min, out_max]",
      params = { { name = "out_min", type = "float", default = 0.0 }, { name = "out_max", type = "float", default = 1.0 },
                 BATCH },
      cli = { adapter = "intensity", options = { "out-min", "out-max", "batch-dims", "output-dtype" } } },
    { name = "percentile_window", family = "intensity", entry = "ndf_percentile_window",
      doc = "each image's [percentile lo, percentile hi] mapped to [out_min, out_max] (e.g. 0.5, 99.5)",
      params = { { name = "lo", type = "float", required = true, doc = "a percentile, 0..100" },
                 { name = "hi", type = "float", required = true, doc = "a percentile, lo..100" },
                 { name = "out_min", type = "float", default = 0.0 }, { name = "out_max", type = "float", default = 1.0 },
                 BATCH },
      cli = { adapter = "intensity", options = { "lo", "hi", "out-min", "out-max", "batch-dims", "output-dtype" },
              required = { "lo", "hi" } },
      bench = { { id = "PWINDOW", key = "pwindow" } } },
    { name = "normalize_zscore", family = "intensity", entry = "ndf_normalize_zscore",
      doc = "(x - mean) / std per image, the statistics from the voxels of --mask (default all)",
      inputs = { { name = "input", dtypes = NUMERIC },
                 { name = "mask", dtypes = NUMERIC, optional = true, cli = "mask", doc = "non-zero = used" } },
      params = { BATCH },
      cli = { adapter = "intensity", options = { "mask", "batch-dims", "output-dtype" } } },
    { name = "equalize_hist", family = "intensity", entry = "ndf_equalize_hist",
      doc = "skimage.exposure.equalize_hist per image (the cumulative histogram at every voxel)",
      inputs = { { name = "image", dtypes = NUMERIC },
                 { name = "mask", dtypes = NUMERIC, optional = true, cli = "mask", doc = "non-zero = used" } },
      params = { { name = "nbins", type = "int", default = 256, doc = "float inputs; integers take one bin per value" },
                 BATCH },
      outputs = { { name = "output", dtype = { "float64", "float32" }, doc = "scikit-image's: float32 for float32 inputs" } },
      cli = { adapter = "intensity", options = { "nbins", "mask", "batch-dims", "output-dtype" } } },

    -- image metrics (skimage.metrics), run by `ndforge metrics NAME` (its short name)
    { name = "mean_squared_error", family = "metrics", entry = "ndf_mean_squared_error",
      doc = "mean((image0 - image1)^2)", command = "metrics", test = "mse", params = { BATCH } },
    { name = "normalized_root_mse", family = "metrics", entry = "ndf_normalized_root_mse",
      doc = "sqrt(mse) over a norm of image_true", command = "metrics", test = "nrmse",
      inputs = { { name = "image_true" }, { name = "image_test" } },
      params = { { name = "normalization", type = "enum", values = { "euclidean", "min-max", "mean" },
                   default = "euclidean" }, BATCH } },
    { name = "peak_signal_noise_ratio", family = "metrics", entry = "ndf_peak_signal_noise_ratio",
      doc = "10 log10(data_range^2 / mse)", command = "metrics", test = "psnr",
      inputs = { { name = "image_true" }, { name = "image_test" } },
      params = { { name = "data_range", type = "float", doc = "default from the dtype of image_true" }, BATCH } },
    { name = "structural_similarity", family = "metrics", entry = "ndf_structural_similarity",
      doc = "mean SSIM (and the SSIM map: --full), uniform or Gaussian windows", command = "metrics", test = "ssim",
      inputs = { { name = "im1" }, { name = "im2" } },
      params = { { name = "win_size", type = "int", doc = "odd; default 7, or from sigma with gaussian_weights" },
                 { name = "data_range", type = "float", doc = "default from the dtype of im1" },
                 { name = "gaussian_weights", type = "bool", default = false },
                 { name = "sigma", type = "float", default = 1.5 },
                 { name = "K1", type = "float", default = 0.01 }, { name = "K2", type = "float", default = 0.03 },
                 { name = "use_sample_covariance", type = "bool", default = true }, BATCH },
      outputs = { { name = "mssim", kind = "per_image", dtype = "float64", optional = true },
                  { name = "full", dtype = { "float64", "float32" }, optional = true, doc = "the SSIM map" } },
      bench = { { id = "SSIM", key = "ssim", setup = "SSIM" },
                { id = "SSIM_GAUSS", key = "ssim_gauss", arg = "structural_similarity_gaussian", setup = "SSIM" } } },
    { name = "dice_coefficient", family = "metrics", entry = "ndf_dice_coefficient",
      doc = "2 |A & B| / (|A| + |B|) of the non-zero masks (1 when both are empty)", command = "metrics",
      test = "dice", params = { BATCH } },
    { name = "jaccard_index", family = "metrics", entry = "ndf_jaccard_index",
      doc = "|A & B| / |A or B| of the non-zero masks (1 when both are empty)", command = "metrics",
      test = "jaccard", params = { BATCH } },
    { name = "hausdorff_distance", family = "metrics", entry = "ndf_hausdorff_distance",
      doc = "Hausdorff distance of the non-zero points (or a percentile of it: HD95)", command = "metrics",
      test = "hausdorff",
      params = { { name = "percentile", type = "float", default = 100.0, doc = "(0, 100]; 95 = HD95" },
                 { name = "sampling", type = "float", per_axis = true, default = 1.0, doc = "default a NIfTI pixdim" },
                 BATCH } },

    -- preprocessing of medical volumes: the steps of `ndforge preprocess` (tools/cli_preprocess.c)
    { name = "reorient_ras", family = "preprocess", entry = "ndf_reorient_ras", command = "preprocess",
      doc = "axes permuted and flipped to RAS+ (nibabel's as_closest_canonical), voxels copied exactly",
      inputs = { { name = "input", dtypes = NUMERIC } },
      params = { { name = "affine", type = "array", required = true, doc = "4x4 voxel to world RAS+" } },
      outputs = { { name = "output", dtype = "input", shape = "the reoriented shape (ndf_reorient_ras_plan)" } } },
    { name = "resample", family = "preprocess", entry = "ndf_resample", command = "preprocess",
      doc = "to a voxel spacing, the grids' centres aligned (the affine from ndf_resample_affine)",
      inputs = { { name = "input", dtypes = with(NUMERIC, "bool") } },
      params = { { name = "spacing", type = "float", per_axis = true, required = true, doc = "the input's, > 0" },
                 { name = "new_spacing", type = "float", per_axis = true, required = true, doc = "> 0" },
                 { name = "order", type = "int", default = 3 },
                 { name = "mode", type = "enum", values = { "constant", "grid-constant", "nearest", "reflect",
                                                             "grid-mirror", "mirror", "wrap", "grid-wrap" },
                   default = "constant" },
                 { name = "cval", type = "float", default = 0.0 }, BATCH },
      outputs = { { name = "output", dtype = { "input", "float32", "float64" }, shape = "round(shape * spacing / new_spacing)" } } },
    { name = "mask_bbox", family = "preprocess", entry = "ndf_mask_bbox", command = "preprocess",
      doc = "the bounding box [lo, hi) of a mask's non-zero voxels and their count",
      inputs = { { name = "mask", dtypes = with(NUMERIC, "bool") } },
      outputs = { { name = "lo", kind = "scalar", dtype = "int64", doc = "one per axis" },
                  { name = "hi", kind = "scalar", dtype = "int64", doc = "one per axis" },
                  { name = "count", kind = "scalar", dtype = "int64", optional = true } } },
    { name = "crop", family = "preprocess", entry = "ndf_crop", command = "preprocess",
      doc = "a box of the input from a start voxel (ndf_crop_plan: a mask's box grown by a margin)",
      inputs = { { name = "input", dtypes = NUMERIC } },
      params = { { name = "start", type = "int", per_axis = true, required = true } },
      outputs = { { name = "output", dtype = "input", shape = "the box (ndf_crop_plan)" } } },
    { name = "normalize_modality", family = "preprocess", entry = "ndf_normalize_modality", command = "preprocess",
      doc = "CT: an HU window to [-1, 1]; MRI: z-score with the statistics of a mask's voxels",
      inputs = { { name = "input", dtypes = NUMERIC },
                 { name = "mask", dtypes = NUMERIC, optional = true, doc = "MRI: non-zero = used" } },
      params = { { name = "modality", type = "enum", values = { "ct", "mri" }, default = "mri" },
                 { name = "preset", type = "enum",
                   values = { "brain", "subdural", "stroke", "bone", "lung", "mediastinum", "soft_tissue", "liver" } },
                 { name = "centre", type = "float", default = 40.0 }, { name = "width", type = "float", default = 80.0 },
                 BATCH },
      outputs = { { name = "output", dtype = { "float32", "float64" } } } },
    -- skull stripping (FSL BET's method) and the brain-mask helpers
    { name = "skull_strip", family = "bet", entry = "ndf_skull_strip",
      doc = "brain mask of a 3-D T1 MRI by FSL BET's deformable surface (Smith 2002)",
      inputs = { { name = "input", dtypes = NUMERIC } },
      params = { { name = "spacing", type = "float", per_axis = true, default = 1.0, doc = "mm per voxel; default a NIfTI pixdim" },
                 { name = "fractional_intensity_threshold", type = "float", default = 0.5, doc = "BET's -f, in [0, 1]" },
                 { name = "vertical_gradient", type = "float", default = 0.0, doc = "BET's -g, in [-1, 1]" },
                 { name = "radius", type = "float", default = 0.0, doc = "BET's -r (mm); 0 estimates it" },
                 { name = "centre", type = "float", per_axis = true, doc = "BET's -c (voxels); default estimated" },
                 { name = "iterations", type = "int", default = 1000 } },
      cli = { adapter = "bet", options = { "f", "g", "r", "c", "sampling", "iterations" } },
      bench = { { id = "SKULL_STRIP", key = "skull_strip", setup = "BET" } } },
    { name = "mask_fusion", family = "bet", entry = "ndf_mask_fusion",
      doc = "weighted voting of several masks (vote > threshold x total weight)", composite = true,
      nowarm = "a host composition: no kernels",
      inputs = { { name = "masks", doc = "n masks of one shape (a list)" } },
      params = { { name = "weights", type = "array", doc = "one >= 0 per mask; default all 1" },
                 { name = "threshold", type = "float", default = 0.5 } } },
    { name = "mask_clean", family = "bet", entry = "ndf_mask_clean",
      doc = "binary opening with a ball, the largest connected component, holes filled", composite = true,
      nowarm = "a host composition of binary_opening, label and binary_fill_holes",
      inputs = { { name = "input" } },
      params = { { name = "opening_radius", type = "int", default = 1 },
                 { name = "largest_component", type = "bool", default = true },
                 { name = "fill_holes", type = "bool", default = true },
                 { name = "connectivity", type = "int", default = 1 } } },
    -- N4 bias-field correction: `ndforge run n4` through tools/cli_n4.c (its own options)
    { name = "n4_bias_field_correction", family = "n4", entry = "ndf_n4_bias_field_correction", command = "run",
      doc = "the image divided by its N4 bias field (a B-spline fit of the log field, histogram sharpening), on the image shrunk by shrink_factor",
      inputs = { { name = "image", dtypes = { "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64" } },
                 { name = "mask", dtypes = { "uint8", "bool" }, optional = true, cli = "mask", doc = "non-zero (or == mask_label) = used by the fit" },
                 { name = "weight", dtypes = { "float32", "float64" }, optional = true, cli = "weight", doc = "ITK's confidence image" } },
      params = { { name = "maximum_number_of_iterations", type = "int", per_axis = true, default = 50, doc = "one count per fitting level (default 4 levels)" },
                 { name = "convergence_threshold", type = "float", default = 0.001 },
                 { name = "spline_order", type = "int", default = 3 },
                 { name = "number_of_control_points", type = "int", per_axis = true, default = 4 },
                 { name = "bias_field_full_width_at_half_maximum", type = "float", default = 0.15 },
                 { name = "wiener_filter_noise", type = "float", default = 0.01 },
                 { name = "number_of_histogram_bins", type = "int", default = 200 },
                 { name = "shrink_factor", type = "int", default = 1 },
                 { name = "spacing", type = "float", per_axis = true, default = 1.0 },
                 { name = "mask_label", type = "int", default = 0, doc = "0: non-zero is inside" } },
      outputs = { { name = "output", dtype = { "float32", "float64" } },
                  { name = "log_bias_field", dtype = { "float32", "float64" }, optional = true } },
      bench = { { id = "N4", key = "n4" } } },
  },
}
