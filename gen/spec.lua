-- spec.lua -- the kernel templates of ndforge and their slots.  Pure data:
-- ndfgen.lua validates it against the templates and emits C tables.
--
-- templates[i]:
--   name     identifier used by the runtime to request the template
--   file     the .cu file, relative to the source root
--   kernels  extern "C" entry points the template defines
--   slots    every NDF_SLOT(NAME) the template uses, with what it means
--   families specializations compiled by the NVRTC tests: each family gives
--            a list of values for every slot; the test compiles the
--            cartesian product of each family.
local int_types = { "unsigned char", "signed char", "unsigned short", "short", "unsigned int", "int" }

return {
  templates = {
    {
      name = "grey_taps",
      file = "templates/grey_taps.cu",
      kernels = { "ndf_grey_taps" },
      slots = {
        T = "element type (C name)",
        NDIM = "spatial axes, 1..8",
        OP = "0 = minimum (erosion), 1 = maximum (dilation)",
        MODE = "boundary mode, 0..4 (see ndf_common.cuh)",
        WEIGHTED = "1 for a non-flat structure",
        KIND = "0 integer, 1 float32, 2 float64",
        T_LO = "least value of an integer T, as a double literal",
        T_HI = "greatest value of an integer T, as a double literal",
      },
      families = {
        { T = int_types, NDIM = { "3" }, OP = { "0" }, MODE = { "0" }, WEIGHTED = { "0", "1" },
          KIND = { "0" }, T_LO = { "0.0" }, T_HI = { "255.0" } },
        { T = { "float" }, NDIM = { "1", "2", "3", "4", "8" }, OP = { "0", "1" }, MODE = { "0", "1", "2", "3", "4" },
          WEIGHTED = { "0" }, KIND = { "1" }, T_LO = { "0.0" }, T_HI = { "0.0" } },
        { T = { "float" }, NDIM = { "3" }, OP = { "1" }, MODE = { "1" }, WEIGHTED = { "1" }, KIND = { "1" },
          T_LO = { "0.0" }, T_HI = { "0.0" } },
        { T = { "double" }, NDIM = { "2" }, OP = { "0", "1" }, MODE = { "2" }, WEIGHTED = { "0", "1" }, KIND = { "2" },
          T_LO = { "0.0" }, T_HI = { "0.0" } },
      },
    },
    {
      name = "grey_box",
      file = "templates/grey_box.cu",
      kernels = { "ndf_grey_box" },
      slots = {
        T = "element type (C name)",
        OP = "0 = minimum (erosion), 1 = maximum (dilation)",
        MODE = "boundary mode, 0..4",
        KZ = "box extent along Z (third-last spatial axis), 1..7",
        KY = "box extent along Y, 1..7",
        KX = "box extent along X (last axis), 1..7",
        TY = "rows per block (tuning)",
        VX = "outputs per thread along X (tuning)",
        ZC = "output planes per block (tuning)",
        TSIZE = "sizeof(T) in bytes",
      },
      families = {
        { T = { "float" }, OP = { "0", "1" }, MODE = { "0", "1", "2", "3", "4" }, KZ = { "3" }, KY = { "3" },
          KX = { "3" }, TY = { "8" }, VX = { "4" }, ZC = { "32" }, TSIZE = { "4" } },
        { T = { "unsigned char", "signed char" }, OP = { "1" }, MODE = { "0" }, KZ = { "1", "3" }, KY = { "3" },
          KX = { "3" }, TY = { "8" }, VX = { "4" }, ZC = { "32" }, TSIZE = { "1" } },
        { T = { "unsigned short", "short" }, OP = { "1" }, MODE = { "0" }, KZ = { "1", "3" }, KY = { "3" },
          KX = { "3" }, TY = { "8" }, VX = { "4" }, ZC = { "32" }, TSIZE = { "2" } },
        { T = { "unsigned int", "int" }, OP = { "1" }, MODE = { "0" }, KZ = { "1", "3" }, KY = { "3" },
          KX = { "3" }, TY = { "8" }, VX = { "4" }, ZC = { "32" }, TSIZE = { "4" } },
        { T = { "double" }, OP = { "1" }, MODE = { "0", "1" }, KZ = { "1", "3" }, KY = { "3" }, KX = { "3" },
          TY = { "8" }, VX = { "4" }, ZC = { "32" }, TSIZE = { "8" } },
        { T = { "float" }, OP = { "0" }, MODE = { "2" }, KZ = { "7", "1" }, KY = { "7", "1" }, KX = { "7", "2" },
          TY = { "8" }, VX = { "4" }, ZC = { "32" }, TSIZE = { "4" } },
      },
    },
    {
      name = "grey_boxd",
      file = "templates/grey_boxd.cu",
      kernels = { "ndf_grey_boxd" },
      slots = {
        T = "element type (C name), at most 4 bytes",
        OP = "0 = minimum (erosion), 1 = maximum (dilation)",
        MODE = "boundary mode, 0..4",
        KZ = "box extent along Z (third-last spatial axis), 1..7",
        KY = "box extent along Y, 1..7",
        KX = "box extent along X (last axis), 1..7",
        RY = "output rows per thread, 1..8 (tuning)",
        TSIZE = "sizeof(T) in bytes",
      },
      families = {
        { T = { "float" }, OP = { "0", "1" }, MODE = { "0", "1", "2", "3", "4" }, KZ = { "7" }, KY = { "7" },
          KX = { "7" }, RY = { "8" }, TSIZE = { "4" } },
        { T = { "float" }, OP = { "1" }, MODE = { "1" }, KZ = { "2", "5", "6" }, KY = { "1", "4" },
          KX = { "1", "3", "6" }, RY = { "8" }, TSIZE = { "4" } },
        { T = { "unsigned char", "signed char" }, OP = { "1" }, MODE = { "0" }, KZ = { "1", "3" }, KY = { "3" },
          KX = { "3" }, RY = { "8" }, TSIZE = { "1" } },
        { T = { "unsigned short", "short" }, OP = { "0" }, MODE = { "0" }, KZ = { "1", "7" }, KY = { "7" },
          KX = { "7" }, RY = { "8", "4" }, TSIZE = { "2" } },
        { T = { "unsigned int", "int" }, OP = { "1" }, MODE = { "0" }, KZ = { "1", "3" }, KY = { "3" },
          KX = { "3" }, RY = { "8", "1" }, TSIZE = { "4" } },
      },
    },
    {
      name = "grey_line",
      file = "templates/grey_line.cu",
      kernels = { "ndf_grey_line" },
      slots = {
        T = "element type (C name)",
        OP = "0 = minimum (erosion), 1 = maximum (dilation)",
        MODE = "boundary mode, 0..4",
        LAST = "1 when the processed axis is the array's last axis",
      },
      families = {
        { T = { "float" }, OP = { "0", "1" }, MODE = { "0", "1", "2", "3", "4" }, LAST = { "0", "1" } },
        { T = int_types, OP = { "0" }, MODE = { "0" }, LAST = { "0", "1" } },
        { T = { "double" }, OP = { "1" }, MODE = { "1", "4" }, LAST = { "0", "1" } },
      },
    },
    {
      name = "grey_lined",
      file = "templates/grey_lined.cu",
      kernels = { "ndf_grey_lined" },
      slots = {
        T = "element type (C name)",
        OP = "0 = minimum (erosion), 1 = maximum (dilation)",
        MODE = "boundary mode, 0..4",
        LAST = "1 when the processed axis is the array's last axis",
      },
      families = {
        { T = { "float" }, OP = { "0", "1" }, MODE = { "0", "1", "2", "3", "4" }, LAST = { "0", "1" } },
        { T = int_types, OP = { "1" }, MODE = { "2" }, LAST = { "0", "1" } },
        { T = { "double" }, OP = { "0" }, MODE = { "3" }, LAST = { "0", "1" } },
      },
    },
    {
      name = "grey_linew",
      file = "templates/grey_linew.cu",
      kernels = { "ndf_grey_linew" },
      slots = {
        T = "element type (C name)",
        OP = "0 = minimum (erosion), 1 = maximum (dilation)",
        MODE = "boundary mode, 0..4",
        K = "the box's extent along the (last) axis, 2..257",
      },
      families = {
        { T = { "float" }, OP = { "0", "1" }, MODE = { "0", "1", "2", "3", "4" }, K = { "63" } },
        { T = { "float" }, OP = { "1" }, MODE = { "0" }, K = { "2", "3", "8", "32", "33", "65", "127", "257" } },
        { T = { "unsigned char", "short", "unsigned int" }, OP = { "0" }, MODE = { "0" }, K = { "9" } },
        { T = { "double" }, OP = { "1" }, MODE = { "1" }, K = { "40", "100" } },
      },
    },
    {
      name = "grey_linev",
      file = "templates/grey_linev.cu",
      kernels = { "ndf_grey_linev" },
      slots = {
        T = "element type (C name)",
        OP = "0 = minimum (erosion), 1 = maximum (dilation)",
        MODE = "boundary mode, 0..4",
      },
      families = {
        { T = { "float" }, OP = { "0", "1" }, MODE = { "0", "1", "2", "3", "4" } },
        { T = { "unsigned char", "short", "unsigned int" }, OP = { "0" }, MODE = { "0" } },
        { T = { "double" }, OP = { "1" }, MODE = { "1" } },
      },
    },
    {
      name = "distance_edt",
      file = "templates/distance_edt.cu",
      kernels = { "ndf_edt_lines", "ndf_edt_rows", "ndf_edt_first", "ndf_edt_first1k", "ndf_edt_wrows",
                  "ndf_edt_wlines" },
      slots = {
        TIN = "input element type (C name; read by the first pass only)",
        DOUT = "distance type, double or float (written by the last pass only)",
        WT = "W between passes: double, or unsigned int (exact arithmetic, W < 2^32)",
        FIRST = "1: the pass reads the input (axis 0)",
        LAST = "1: the pass writes distances and indices (the last axis)",
        HAS_DIST = "1: distances are wanted (LAST)",
        HAS_IDX = "1: indices are wanted (LAST)",
      },
      families = {
        { TIN = { "unsigned char", "float" }, DOUT = { "double" }, WT = { "double" }, FIRST = { "1" }, LAST = { "0" },
          HAS_DIST = { "0" }, HAS_IDX = { "0" } },
        { TIN = { "unsigned char" }, DOUT = { "double" }, WT = { "double", "unsigned int" }, FIRST = { "0" },
          LAST = { "0" }, HAS_DIST = { "0" }, HAS_IDX = { "0" } },
        { TIN = { "unsigned char" }, DOUT = { "double", "float" }, WT = { "double" }, FIRST = { "0" }, LAST = { "1" },
          HAS_DIST = { "1" }, HAS_IDX = { "0", "1" } },
        { TIN = { "unsigned char" }, DOUT = { "double" }, WT = { "unsigned int" }, FIRST = { "1", "0" }, LAST = { "1", "0" },
          HAS_DIST = { "1" }, HAS_IDX = { "1" } },
        { TIN = { "short", "double" }, DOUT = { "float" }, WT = { "double" }, FIRST = { "1" }, LAST = { "1" },
          HAS_DIST = { "0", "1" }, HAS_IDX = { "1" } },
      },
    },
    {
      name = "distance_cdt",
      file = "templates/distance_cdt.cu",
      kernels = { "ndf_cdt_lines", "ndf_cdt_rows", "ndf_cdt_seg", "ndf_cdt_ctile" },
      slots = {
        TIN = "input element type (C name; read by the first pass only)",
        LAST = "1: the pass writes the int32 distances",
        CHESS = "1: chessboard (later passes: min of max), 0: taxicab (min-plus)",
      },
      families = {
        { TIN = { "unsigned char", "float", "short" }, LAST = { "0", "1" }, CHESS = { "0" } },
        { TIN = { "unsigned char" }, LAST = { "0", "1" }, CHESS = { "1" } },
      },
    },
    {
      name = "distance_bf",
      file = "templates/distance_bf.cu",
      kernels = { "ndf_bf_mark", "ndf_bf_list", "ndf_bf_dist" },
      slots = {
        TIN = "input element type (C name; read by ndf_bf_mark only)",
        NSP = "spatial axes, 1..8",
        METRIC = "0 euclidean (float64), 1 taxicab, 2 chessboard (uint32)",
      },
      families = {
        { TIN = { "unsigned char", "float", "double" }, NSP = { "1", "2", "3" }, METRIC = { "0" } },
        { TIN = { "unsigned char" }, NSP = { "2", "3", "4", "8" }, METRIC = { "0", "1", "2" } },
      },
    },
    {
      name = "elementwise",
      file = "templates/elementwise.cu",
      kernels = { "ndf_elementwise" },
      slots = {
        T = "element type (C name)",
        U = "unsigned type of T's width for integers (NumPy wraparound); T for floats",
        KIND = "0: a - b; 1: ((a + b) - c) - c",
      },
      families = {
        { T = { "unsigned char" }, U = { "unsigned char" }, KIND = { "0", "1" } },
        { T = { "signed char" }, U = { "unsigned char" }, KIND = { "0", "1" } },
        { T = { "unsigned short", "short" }, U = { "unsigned short" }, KIND = { "0" } },
        { T = { "unsigned int", "int" }, U = { "unsigned int" }, KIND = { "1" } },
        { T = { "float" }, U = { "float" }, KIND = { "0", "1" } },
        { T = { "double" }, U = { "double" }, KIND = { "0", "1" } },
      },
    },
    {
      name = "binary_pack",
      file = "templates/binary_pack.cu",
      kernels = { "ndf_bin_pack" },
      slots = {
        T = "input element type (C name)",
        VEC = "1: one thread per word with 16-byte loads (1-byte T, unit last stride, nx % 32 == 0, aligned rows)",
      },
      families = {
        { T = { "unsigned char" }, VEC = { "0", "1" } },
        { T = { "signed char", "unsigned short", "short", "unsigned int", "int", "float", "double" }, VEC = { "0" } },
      },
    },
    {
      name = "binary_step",
      file = "templates/binary_step.cu",
      kernels = { "ndf_bin_step" },
      slots = {
        OP = "0: AND over the taps (erosion), 1: OR (dilation, the miss of hit_or_miss)",
        CYCLE = "1: also compare each state with the saved one (cycle detection)",
        INPLACE = "1: monotone iteration in one buffer with block-local repeats (iterations < 1, centre in)",
      },
      families = {
        { OP = { "0", "1" }, CYCLE = { "0", "1" }, INPLACE = { "0" } },
        { OP = { "0", "1" }, CYCLE = { "0" }, INPLACE = { "1" } },
      },
    },
    {
      name = "binary_unpack",
      file = "templates/binary_unpack.cu",
      kernels = { "ndf_bin_unpack" },
      slots = {
        VEC = "1: one thread per word with 16-byte stores (unit last stride, nx % 32 == 0, aligned rows)",
      },
      families = {
        { VEC = { "0", "1" } },
      },
    },
    {
      name = "binary_fstep",
      file = "templates/binary_fstep.cu",
      kernels = { "ndf_bin_fstep" },
      slots = {
        OP = "0: AND over the taps (erosion), 1: OR (dilation, the miss of hit_or_miss)",
        CYCLE = "1: also compare each state with the saved one (cycle detection)",
        NRA = "spatial axes but the last, 0..7",
        TAPS = "generated code: one block per tap row (runtime/binary_cuda.c, fstep_code)",
      },
      families = {
        { OP = { "0", "1" }, CYCLE = { "0", "1" }, NRA = { "0", "1", "2", "3" },
          TAPS = { "{ const bool ok = true; const unsigned *b = ndf_trow(p, row, ok, 0u); "
                   .. "const unsigned w0 = NDF_W(-1), w1 = NDF_W(0), w2 = NDF_W(1); "
                   .. "acc = NDF_OPB(acc, ok ? NDF_OPB(NDF_OPB(__funnelshift_r(w0, w1, 31), w1), "
                   .. "__funnelshift_r(w1, w2, 1)) : border); }" } },
        { OP = { "0", "1" }, CYCLE = { "0" }, NRA = { "1", "2", "7" },
          TAPS = { "{ const bool ok = NDF_RY(0, -1); const unsigned *b = ndf_trow(p, row, ok, 0u + (unsigned)(-1) * rst[0]); "
                   .. "const unsigned w0 = NDF_W(0); acc = NDF_OPB(acc, ok ? (w0) : border); }" } },
      },
    },
    {
      name = "label",
      file = "templates/label.cu",
      kernels = { "ndf_label" },
      slots = {
        O = "output element type (C name)",
      },
      families = {
        { O = { "int", "unsigned char", "signed char", "unsigned short", "short", "unsigned int", "float", "double" } },
      },
    },
    {
      name = "binary_ccl",
      file = "templates/binary_ccl.cu",
      kernels = { "ndf_ccl" },
      slots = {
        NSP = "spatial axes, 1..8",
      },
      families = {
        { NSP = { "1", "2", "3", "4", "8" } },
      },
    },
    {
      name = "binary_flood",
      file = "templates/binary_flood.cu",
      kernels = { "ndf_bin_flood" },
      slots = {
        CONN = "6: the cross (face neighbours), 26: the full 3^n box",
        K = "words per thread along x (a tile is 32 K voxels wide)",
      },
      families = {
        { CONN = { "6", "26" }, K = { "1", "2" } },
      },
    },
    {
      name = "rank",
      file = "templates/rank.cu",
      kernels = { "ndf_rank" },
      slots = {
        T = "element type (C name)",
        KIND = "0 unsigned integer, 1 signed integer, 2 floating point",
        TBITS = "bits of T",
        MODE = "boundary mode, 0..4",
        NAN_OMIT = "1: NaNs are left out of the window (floats only)",
        ALGO = "0 generated selection network, 1 bitwise radix select, 2 3x3 median by sorted rows, 3 the same with the tile load unrolled",
        N = "taps of the window",
        RKIND = "0 median, 1 rank, 2 percentile",
        RPARAM = "the rank (RKIND 1) or percentile (RKIND 2) as a literal; 0 for the median",
        OUTREG = "register holding the result of the network",
        TX = "outputs per block along X (the last axis)",
        TY = "threads per block along Y",
        RY = "outputs per thread along Y (consecutive rows)",
        RZ = "outputs per block along Z, the innermost axis in front of Y the window spans (1: none)",
        KY = "extent of the window's offsets along Y",
        KX = "extent of the window's offsets along X",
        NPLANES = "distinct offsets of the window along the spatial axes in front of Y",
        NLEADSP = "spatial axes in front of Y",
        OFFS = "N tile offsets of the taps, comma-separated",
        PLANES = "NPLANES * NLEADSP offsets, comma-separated ('0' when NLEADSP = 0)",
        NET = "the network's steps: X(a,b) compare-exchange, MN(a,b) a <- min, MX(a,b) b <- max",
      },
      families = {
        -- 3x3 median, float, reflect and constant, both NaN policies
        { T = { "float" }, KIND = { "2" }, TBITS = { "32" }, MODE = { "0", "1" }, NAN_OMIT = { "0", "1" },
          ALGO = { "0" }, N = { "3" }, RKIND = { "0" }, RPARAM = { "0" }, OUTREG = { "1" }, TX = { "32" },
          TY = { "8" }, RY = { "1", "4" }, RZ = { "1" }, KY = { "1" }, KX = { "3" }, NPLANES = { "1" }, NLEADSP = { "0" }, OFFS = { "0,1,2" },
          PLANES = { "0" }, NET = { "X(0,1)MN(1,2)MX(0,1)" } },
        -- 3x3 median by sorted rows (ALGO 2, 3), every dtype, both NaN policies
        { T = { "float", "double", "unsigned char", "int" }, KIND = { "2" }, TBITS = { "32" }, MODE = { "0" },
          NAN_OMIT = { "0", "1" }, ALGO = { "2", "3" }, N = { "9" }, RKIND = { "0" }, RPARAM = { "0" }, OUTREG = { "4" },
          TX = { "32" }, TY = { "8" }, RY = { "8" }, RZ = { "1" }, KY = { "3" }, KX = { "3" }, NPLANES = { "1" },
          NLEADSP = { "0" }, OFFS = { "0,1,2,34,35,36,68,69,70" }, PLANES = { "0" }, NET = { "" } },
        -- radix select for every dtype, a 3-D window of two planes
        { T = { "unsigned char", "signed char", "unsigned short", "short", "unsigned int", "int", "float", "double" },
          KIND = { "1" }, TBITS = { "8" }, MODE = { "4" }, NAN_OMIT = { "0" }, ALGO = { "1" }, N = { "4" },
          RKIND = { "1" }, RPARAM = { "2" }, OUTREG = { "0" }, TX = { "32" }, TY = { "4" }, RY = { "1" }, RZ = { "1" }, KY = { "1" },
          KX = { "2" }, NPLANES = { "2" }, NLEADSP = { "1" }, OFFS = { "0,1,330,331" }, PLANES = { "0,1" },
          NET = { "" } },
        { T = { "double" }, KIND = { "2" }, TBITS = { "64" }, MODE = { "2" }, NAN_OMIT = { "1" }, ALGO = { "1" },
          N = { "2" }, RKIND = { "2" }, RPARAM = { "37.5" }, OUTREG = { "0" }, TX = { "32" }, TY = { "8" }, RY = { "2" },
          RZ = { "2" },
          KY = { "2" }, KX = { "1" }, NPLANES = { "2" }, NLEADSP = { "1" }, OFFS = { "0,32,1000,1032" }, PLANES = { "0,1" },
          NET = { "" } },
      },
    },
    {
      name = "rank_tile",
      file = "templates/rank_tile.cu",
      kernels = { "ndf_rank_tile" },
      slots = {
        T = "element type of at most 32 bits (C name)",
        KIND = "0 unsigned integer, 1 signed integer, 2 floating point",
        TBITS = "bits of T: 8, 16 or 32",
        MODE = "boundary mode, 0..4",
        NAN_OMIT = "1: NaNs are left out of the window (floats only)",
        N = "taps of the window (KY * KX)",
        RKIND = "0 median, 1 rank, 2 percentile",
        RPARAM = "the rank (RKIND 1) or percentile (RKIND 2) as a literal; 0 for the median",
        KY = "box extent along Y",
        KX = "box extent along X",
        S = "output rows per block (even)",
        RP2 = "power of two >= (S + KY - 1) * (32 + KX - 1): the sort's size",
      },
      families = {
        { T = { "float" }, KIND = { "2" }, TBITS = { "32" }, MODE = { "0", "1" }, NAN_OMIT = { "0", "1" },
          N = { "961" }, RKIND = { "0" }, RPARAM = { "0" }, KY = { "31" }, KX = { "31" }, S = { "36" },
          RP2 = { "4096" } },
        { T = { "unsigned char", "signed char", "unsigned short", "short", "unsigned int", "int" },
          KIND = { "1" }, TBITS = { "8" }, MODE = { "4" }, NAN_OMIT = { "0" }, N = { "12" }, RKIND = { "1", "2" },
          RPARAM = { "5" }, KY = { "3" }, KX = { "4" }, S = { "2" }, RP2 = { "256" } },
        { T = { "float" }, KIND = { "2" }, TBITS = { "32" }, MODE = { "3" }, NAN_OMIT = { "1" },
          N = { "3721" }, RKIND = { "2" }, RPARAM = { "37.5" }, KY = { "61" }, KX = { "61" }, S = { "28" },
          RP2 = { "8192" } },
      },
    },
    {
      name = "rank_hist",
      file = "templates/rank_hist.cu",
      kernels = { "ndf_rank_hist" },
      slots = {
        T = "element type: unsigned char or signed char",
        KIND = "0 unsigned, 1 signed",
        MODE = "boundary mode, 0..4",
        RKIND = "0 median, 1 rank, 2 percentile",
        RPARAM = "the rank (RKIND 1) or percentile (RKIND 2) as a literal; 0 for the median",
        BX = "threads (output columns) per block",
        STRIP = "output rows per thread",
      },
      families = {
        { T = { "unsigned char" }, KIND = { "0" }, MODE = { "0", "1", "2", "3", "4" }, RKIND = { "0" },
          RPARAM = { "0" }, BX = { "64" }, STRIP = { "32" } },
        { T = { "signed char" }, KIND = { "1" }, MODE = { "1" }, RKIND = { "1", "2" }, RPARAM = { "17" },
          BX = { "64" }, STRIP = { "32" } },
      },
    },
    {
      name = "ecc",
      file = "templates/ecc.cu",
      kernels = { "ndf_ecc_hist", "ndf_ecc_pack", "ndf_ecc_scan", "ndf_ecc_final", "ndf_ecc_soft", "ndf_ecc_put" },
      slots = {
        TIN = "input element type (C name)",
        V = "comparison type: float (uint8, uint16, float32) or double (float64)",
        NSP = "spatial axes, 2 or 3",
        CONS = "0 V-construction, 1 T-construction",
        SOFT = "1: ndf_ecc_hist writes c and f per voxel (soft ECC) instead of the histogram",
      },
      families = {
        { TIN = { "float" }, V = { "float" }, NSP = { "2", "3" }, CONS = { "0", "1" }, SOFT = { "0", "1" } },
        { TIN = { "unsigned char", "unsigned short" }, V = { "float" }, NSP = { "3" }, CONS = { "1" }, SOFT = { "0" } },
        { TIN = { "double" }, V = { "double" }, NSP = { "2", "3" }, CONS = { "0" }, SOFT = { "0", "1" } },
      },
    },
    {
      name = "ect",
      file = "templates/ect.cu",
      kernels = { "ndf_ect_hist", "ndf_ect_final" },
      slots = {
        TIN = "input element type (C name)",
        NSP = "spatial axes, 2 or 3",
        CONS = "0 V-construction, 1 T-construction",
        WT = "1: weighted ECT (float64 sums), 0: binary ECT (int64 counts)",
      },
      families = {
        { TIN = { "unsigned char", "float" }, NSP = { "2", "3" }, CONS = { "0", "1" }, WT = { "0", "1" } },
        { TIN = { "unsigned short", "double" }, NSP = { "3" }, CONS = { "1" }, WT = { "1" } },
      },
    },
    {
      name = "ect_soft",
      file = "templates/ect_soft.cu",
      kernels = { "ndf_ect_soft", "ndf_ect_soft_put" },
      slots = {
        TIN = "input element type (C name)",
        NSP = "spatial axes, 2 or 3",
        CONS = "0 V-construction, 1 T-construction",
        WT = "1: weighted (the image values weight the cells), 0: binary",
        FAST = "1: the sigmoid in float (__expf), 0: in double (the CPU's arithmetic)",
      },
      families = {
        { TIN = { "unsigned char", "float" }, NSP = { "2", "3" }, CONS = { "0", "1" }, WT = { "0", "1" }, FAST = { "0" } },
        { TIN = { "unsigned short", "double" }, NSP = { "2", "3" }, CONS = { "1" }, WT = { "1" }, FAST = { "0", "1" } },
      },
    },
    {
      name = "sinkhorn",
      file = "templates/sinkhorn.cu",
      kernels = { "ndf_sinkhorn" },
      slots = {
        T = "float or double: the arithmetic of the iteration",
        KIND = "cost: 0 dense, 1 grid L^p (separable), 2 grid euclidean (offset table)",
        LOGD = "1: log-domain iteration (online log-sum-exp); 0: scaling form",
        NSP = "grid axes, 1..8 (dense: 1)",
      },
      families = {
        { T = { "float", "double" }, KIND = { "1" }, LOGD = { "0", "1" }, NSP = { "2" } },
        { T = { "float" }, KIND = { "0", "2" }, LOGD = { "0", "1" }, NSP = { "1", "2" } },
        { T = { "double" }, KIND = { "0", "1", "2" }, LOGD = { "1" }, NSP = { "3" } },
      },
    },
    {
      name = "sinkhorn_grid2",
      file = "templates/sinkhorn_grid2.cu",
      kernels = { "ndf_sinkhorn_grid2" },
      slots = {
        T = "float or double: the arithmetic of the iteration",
        LOGD = "1: log-domain iteration (two-pass log-sum-exp in log2 units); 0: scaling form",
        N0 = "grid rows, 1..32",
        N1 = "grid columns, 1..32",
      },
      families = {
        { T = { "float" }, LOGD = { "0", "1" }, N0 = { "32" }, N1 = { "32" } },
        { T = { "double" }, LOGD = { "0", "1" }, N0 = { "12" }, N1 = { "9" } },
      },
    },
    {
      name = "sinkhorn_cluster",
      file = "templates/sinkhorn_cluster.cu",
      kernels = { "ndf_sinkhorn_cluster" },
      slots = {
        T = "float or double: the arithmetic of the iteration",
        LOGD = "1: log-domain iteration (two-pass log-sum-exp in log2 units); 0: scaling form",
        N0 = "grid rows, 1..32",
        N1 = "grid columns, 1..32",
        CL = "blocks per cluster (one histogram pair), 2..16 (sm_90); 1: one block, no cluster (float)",
      },
      families = {
        { T = { "float" }, LOGD = { "0", "1" }, N0 = { "32" }, N1 = { "32" }, CL = { "1", "2", "4", "8" } },
        { T = { "double" }, LOGD = { "0", "1" }, N0 = { "12" }, N1 = { "9" }, CL = { "2", "4" } },
      },
    },
    {
      name = "sinkhorn_dense",
      file = "templates/sinkhorn_dense.cu",
      kernels = { "ndf_sinkhorn_dense" },
      slots = {
        T = "float or double: the arithmetic of the iteration",
        LOGD = "1: log-domain iteration (online log-sum-exp); 0: scaling form",
      },
      families = {
        { T = { "float", "double" }, LOGD = { "0", "1" } },
      },
    },
  },
  -- Pruned selection networks for the rank filters (gen/selnet.lua): every
  -- rank of windows up to all_ranks_up_to taps, the median up to medians_up_to.
  selection_networks = { all_ranks_up_to = 27, medians_up_to = 49 },
}
