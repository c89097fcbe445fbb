/*
 * dicom_io.cpp -- DICOM series in and out through GDCM (dicom_io.h says what
 * is read and written, and what is refused).
 *
 * Reading: gdcm::Scanner reads the tags every check needs from each file (it
 * stops before the pixel data), the files are grouped by SeriesInstanceUID,
 * one series is checked and ordered here, then gdcm::ImageReader decodes each
 * slice's pixels (any transfer syntax GDCM reads, compressed ones included).
 * Writing: one gdcm::Writer dataset per slice, every attribute set here.
 */
#include "dicom_io.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gdcmDataElement.h>
#include <gdcmDataSet.h>
#include <gdcmFile.h>
#include <gdcmImage.h>
#include <gdcmImageReader.h>
#include <gdcmReader.h>
#include <gdcmScanner.h>
#include <gdcmSequenceOfItems.h>
#include <gdcmTag.h>
#include <gdcmTrace.h>
#include <gdcmUIDGenerator.h>
#include <gdcmWriter.h>

#include <nifti1_io.h>

namespace {

/* The tags the reader looks at. */
const gdcm::Tag T_SERIES_UID(0x0020, 0x000e), T_SERIES_NUMBER(0x0020, 0x0011), T_SERIES_DESCR(0x0008, 0x103e),
    T_MODALITY(0x0008, 0x0060), T_IPP(0x0020, 0x0032), T_IOP(0x0020, 0x0037), T_SPACING(0x0028, 0x0030),
    T_ROWS(0x0028, 0x0010), T_COLS(0x0028, 0x0011), T_BITS_ALLOC(0x0028, 0x0100), T_BITS_STORED(0x0028, 0x0101),
    T_PIXREP(0x0028, 0x0103), T_SAMPLES(0x0028, 0x0002), T_INTERCEPT(0x0028, 0x1052), T_SLOPE(0x0028, 0x1053),
    T_FRAMES(0x0028, 0x0008), T_THICKNESS(0x0018, 0x0050), T_BETWEEN(0x0018, 0x0088);

void errf(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

std::string trim(const char *s) {
  if (!s) return std::string();
  std::string t(s);
  size_t b = t.find_first_not_of(" \t\r\n");
  size_t e = t.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
}

/* A backslash-separated list of decimal strings (DS, IS); false unless
 * exactly n finite numbers. */
bool parse_numbers(const std::string &s, int n, double *out) {
  const char *p = s.c_str();
  for (int i = 0; i < n; i++) {
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p || errno == ERANGE || !std::isfinite(v)) return false;
    out[i] = v;
    while (*end == ' ') end++;
    if (i + 1 < n) {
      if (*end != '\\') return false;
      p = end + 1;
    } else if (*end) {
      return false;
    }
  }
  return true;
}

/* One file's view of what the series needs. */
struct Slice {
  std::string path;  // for messages: the file, with " (frame N)" for a frame of a multi-frame file
  std::string file;
  long frame;        // 0-based frame of the file
  double ipp[3], iop[6], spacing[2];
  long rows, cols, bits_alloc, bits_stored, pixrep, samples, frames;
  double slope, intercept;
  double pos;  // ImagePositionPatient on the slice normal
};

struct Series {
  std::string uid, descr, number_str;
  long number;
  std::vector<std::string> files;
};

/* The regular files of paths: a directory's entries (not its hidden files
 * or subdirectories), sorted by name, or the files named. */
bool list_files(const char *const *paths, int npaths, std::vector<std::string> &files, char *err, size_t errlen) {
  for (int i = 0; i < npaths; i++) {
    struct stat st;
    if (stat(paths[i], &st) != 0) {
      errf(err, errlen, "cannot read '%s': %s", paths[i], strerror(errno));
      return false;
    }
    if (S_ISDIR(st.st_mode)) {
      DIR *d = opendir(paths[i]);
      if (!d) {
        errf(err, errlen, "cannot read the directory '%s': %s", paths[i], strerror(errno));
        return false;
      }
      std::vector<std::string> names;
      std::string dir(paths[i]);
      if (!dir.empty() && dir.back() != '/') dir += '/';
      while (struct dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::string p = dir + e->d_name;
        struct stat fs;
        if (stat(p.c_str(), &fs) == 0 && S_ISREG(fs.st_mode)) names.push_back(p);
      }
      closedir(d);
      std::sort(names.begin(), names.end());
      files.insert(files.end(), names.begin(), names.end());
    } else if (S_ISREG(st.st_mode)) {
      files.push_back(paths[i]);
    } else {
      errf(err, errlen, "cannot read '%s': not a regular file or a directory", paths[i]);
      return false;
    }
  }
  return true;
}

std::string where(const char *const *paths, int npaths) {
  if (npaths == 1) return std::string("'") + paths[0] + "'";
  return std::to_string(npaths) + " files ('" + paths[0] + "' ...)";
}

/* "a.dcm", "a.dcm and b.dcm", "a.dcm, b.dcm and 5 more" */
std::string name_files(const std::vector<const Slice *> &v) {
  std::string s;
  size_t n = std::min<size_t>(v.size(), 2);
  for (size_t i = 0; i < n; i++) s += (i ? (v.size() == 2 ? " and '" : ", '") : "'") + v[i]->path + "'";
  if (v.size() > 2) s += " and " + std::to_string(v.size() - 2) + " more";
  return s;
}

bool close_rel(double a, double b, double rel) {
  return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

/* The ndforge dtype that holds `bits` bits, signed or not. */
ndf_dtype stored_dtype(long bits, bool is_signed) {
  if (bits <= 8) return is_signed ? NDF_INT8 : NDF_UINT8;
  if (bits <= 16) return is_signed ? NDF_INT16 : NDF_UINT16;
  return is_signed ? NDF_INT32 : NDF_UINT32;
}

int nifti_code(ndf_dtype t) {
  switch (t) {
  case NDF_UINT8: return DT_UINT8;
  case NDF_INT8: return DT_INT8;
  case NDF_UINT16: return DT_UINT16;
  case NDF_INT16: return DT_INT16;
  case NDF_UINT32: return DT_UINT32;
  case NDF_INT32: return DT_INT32;
  case NDF_FLOAT32: return DT_FLOAT32;
  default: return DT_FLOAT64;
  }
}

template <typename T> void store(void *dst, const double *v, size_t n) {
  T *d = static_cast<T *>(dst);
  for (size_t i = 0; i < n; i++) d[i] = static_cast<T>(v[i]);
}
template <typename T> void load(const void *src, double *v, size_t n) {
  const T *s = static_cast<const T *>(src);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<double>(s[i]);
}

/* n values between doubles and an array of dtype t (an integer type or
 * float32). */
void put_values(void *dst, ndf_dtype t, const double *v, size_t n) {
  switch (t) {
  case NDF_UINT8: store<uint8_t>(dst, v, n); break;
  case NDF_INT8: store<int8_t>(dst, v, n); break;
  case NDF_UINT16: store<uint16_t>(dst, v, n); break;
  case NDF_INT16: store<int16_t>(dst, v, n); break;
  case NDF_UINT32: store<uint32_t>(dst, v, n); break;
  case NDF_INT32: store<int32_t>(dst, v, n); break;
  default: store<float>(dst, v, n); break;
  }
}
void get_values(const void *src, ndf_dtype t, double *v, size_t n) {
  switch (t) {
  case NDF_UINT8: load<uint8_t>(src, v, n); break;
  case NDF_INT8: load<int8_t>(src, v, n); break;
  case NDF_UINT16: load<uint16_t>(src, v, n); break;
  case NDF_INT16: load<int16_t>(src, v, n); break;
  case NDF_UINT32: load<uint32_t>(src, v, n); break;
  case NDF_INT32: load<int32_t>(src, v, n); break;
  default: load<float>(src, v, n); break;
  }
}

/* The scanner's value of tag t in file f, trimmed ("" when absent). */
std::string val(const gdcm::Scanner &sc, const std::string &f, const gdcm::Tag &t) {
  return trim(sc.GetValue(f.c_str(), t));
}

long long_or(const std::string &s, long dflt) {
  if (s.empty()) return dflt;
  char *end;
  long v = strtol(s.c_str(), &end, 10);
  return *end ? dflt : v;
}

double double_or(const std::string &s, double dflt) {
  double v;
  return !s.empty() && parse_numbers(s, 1, &v) ? v : dflt;
}

/* One file's decoded pixels (every frame), kept while its slices are read. */
struct Decoded {
  std::string file;
  std::vector<char> buf;
  unsigned alloc = 0, stored = 0;
  bool sgn = false;
  size_t frames = 0;
};

/* Reads the stored values of one slice's pixels into v (rows * cols
 * doubles), sign-extended from BitsStored bits; d caches the file. */
bool read_pixels(const Slice &s, Decoded &d, double *v, char *err, size_t errlen) {
  const size_t n = (size_t)s.rows * (size_t)s.cols;
  if (d.file != s.file) {
    d.file.clear();
    gdcm::ImageReader r;
    r.SetFileName(s.file.c_str());
    if (!r.Read()) {
      errf(err, errlen, "cannot read the pixels of '%s' (GDCM cannot decode it)", s.file.c_str());
      return false;
    }
    const gdcm::Image &im = r.GetImage();
    const gdcm::PixelFormat &pf = im.GetPixelFormat();
    if (im.GetColumns() != (unsigned)s.cols || im.GetRows() != (unsigned)s.rows || pf.GetSamplesPerPixel() != 1) {
      errf(err, errlen, "cannot read the pixels of '%s': GDCM gives a %ux%u image of %u samples, the header "
           "says %ldx%ld of 1", s.file.c_str(), im.GetColumns(), im.GetRows(), pf.GetSamplesPerPixel(), s.cols,
           s.rows);
      return false;
    }
    d.alloc = pf.GetBitsAllocated();
    d.sgn = pf.GetPixelRepresentation() == 1;
    d.stored = pf.GetBitsStored() ? pf.GetBitsStored() : d.alloc;
    d.buf.resize(im.GetBufferLength());
    d.frames = d.alloc ? d.buf.size() / (n * (d.alloc / 8 ? d.alloc / 8 : 1)) : 0;
    if ((d.alloc != 8 && d.alloc != 16 && d.alloc != 32) || d.frames < (size_t)s.frames ||
        !im.GetBuffer(d.buf.data())) {
      errf(err, errlen, "cannot read the pixels of '%s' (%u bits allocated, %zu bytes for %ld frame%s of %zu "
           "pixels)", s.file.c_str(), d.alloc, d.buf.size(), s.frames, s.frames == 1 ? "" : "s", n);
      return false;
    }
    d.file = s.file;
  }
  const unsigned alloc = d.alloc, stored = d.stored;
  const char *buf = d.buf.data() + (size_t)s.frame * n * (alloc / 8);
  const uint64_t mask = stored >= 32 ? 0xffffffffu : ((uint64_t)1 << stored) - 1;
  for (size_t i = 0; i < n; i++) {
    uint64_t u;
    if (alloc == 8) u = (uint8_t)buf[i];
    else if (alloc == 16) { uint16_t x; memcpy(&x, &buf[2 * i], 2); u = x; }
    else { uint32_t x; memcpy(&x, &buf[4 * i], 4); u = x; }
    u &= mask;
    int64_t val = (int64_t)u;
    if (d.sgn && stored < 64 && (u >> (stored - 1)) & 1) val = (int64_t)u - ((int64_t)1 << stored);
    v[i] = (double)val;
  }
  return true;
}

/* A string value of ds (trimmed, "" when absent or empty). */
std::string str_of(const gdcm::DataSet &ds, const gdcm::Tag &t) {
  if (!ds.FindDataElement(t)) return std::string();
  const gdcm::ByteValue *bv = ds.GetDataElement(t).GetByteValue();
  if (!bv || !bv->GetPointer()) return std::string();
  std::string v(bv->GetPointer(), bv->GetLength());
  v.erase(std::find(v.begin(), v.end(), '\0'), v.end());
  return trim(v.c_str());
}

/* The nested dataset of item idx (1-based) of sequence t of ds, or NULL. */
const gdcm::DataSet *item_of(const gdcm::DataSet &ds, const gdcm::Tag &t, size_t idx) {
  if (!ds.FindDataElement(t)) return nullptr;
  gdcm::SmartPointer<gdcm::SequenceOfItems> sq = ds.GetDataElement(t).GetValueAsSQ();
  if (!sq || sq->GetNumberOfItems() < idx) return nullptr;
  return &sq->GetItem(idx).GetNestedDataSet();
}

/* The frames of a multi-frame (enhanced) file as slices: each frame's
 * geometry and rescaling from its per-frame functional groups, else the
 * shared ones, else the file's top level. */
bool frames_of(const Slice &base, std::vector<Slice> &out, char *err, size_t errlen) {
  gdcm::Reader r;
  r.SetFileName(base.file.c_str());
  std::set<gdcm::Tag> skip;
  if (!r.ReadUpToTag(gdcm::Tag(0x7fe0, 0x0010), skip)) {
    errf(err, errlen, "cannot read '%s' (GDCM cannot parse it)", base.file.c_str());
    return false;
  }
  const gdcm::DataSet &ds = r.GetFile().GetDataSet();
  const gdcm::Tag PER(0x5200, 0x9230), SHARED(0x5200, 0x9229);
  const gdcm::DataSet *shared = item_of(ds, SHARED, 1);
  for (long f = 0; f < base.frames; f++) {
    const gdcm::DataSet *per = item_of(ds, PER, (size_t)f + 1);
    /* attribute t of functional group macro m: per-frame, shared, top level */
    auto get = [&](uint16_t mg, uint16_t me, const gdcm::Tag &t) {
      for (const gdcm::DataSet *g : {per, shared}) {
        const gdcm::DataSet *m = g ? item_of(*g, gdcm::Tag(mg, me), 1) : nullptr;
        if (m) {
          std::string v = str_of(*m, t);
          if (!v.empty()) return v;
        }
      }
      return str_of(ds, t);
    };
    Slice s = base;
    s.frame = f;
    s.path = base.file + " (frame " + std::to_string(f + 1) + ")";
    const char *missing = nullptr;
    if (!parse_numbers(get(0x0020, 0x9113, T_IPP), 3, s.ipp)) missing = "ImagePositionPatient";
    else if (!parse_numbers(get(0x0020, 0x9116, T_IOP), 6, s.iop)) missing = "ImageOrientationPatient";
    else if (!parse_numbers(get(0x0028, 0x9110, T_SPACING), 2, s.spacing) || !(s.spacing[0] > 0 && s.spacing[1] > 0))
      missing = "PixelSpacing";
    if (missing) {
      errf(err, errlen, "cannot read '%s': no valid %s for frame %ld (a volume needs the image plane's geometry)",
           base.file.c_str(), missing, f + 1);
      return false;
    }
    s.slope = double_or(get(0x0028, 0x9145, T_SLOPE), 1.0);
    s.intercept = double_or(get(0x0028, 0x9145, T_INTERCEPT), 0.0);
    if (s.slope == 0) s.slope = 1.0;
    out.push_back(s);
  }
  return true;
}

/* 4x4 RAS affine (double) into a nifti_image's sform and qform (code 1). */
void set_affine(nifti_image *nim, const double A[4][4]) {
  mat44 m;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) m.m[i][j] = (float)A[i][j];
  nim->sform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->sto_xyz = m;
  nim->sto_ijk = nifti_mat44_inverse(m);
  float qb, qc, qd, qx, qy, qz, dx, dy, dz, qfac;
  nifti_mat44_to_quatern(m, &qb, &qc, &qd, &qx, &qy, &qz, &dx, &dy, &dz, &qfac);
  nim->qform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->quatern_b = qb;
  nim->quatern_c = qc;
  nim->quatern_d = qd;
  nim->qoffset_x = qx;
  nim->qoffset_y = qy;
  nim->qoffset_z = qz;
  nim->qfac = qfac;
  for (int i = 0; i < 3; i++) {
    double n = std::sqrt(A[0][i] * A[0][i] + A[1][i] * A[1][i] + A[2][i] * A[2][i]);
    nim->pixdim[i + 1] = (float)n;
  }
  nim->dx = nim->pixdim[1];
  nim->dy = nim->pixdim[2];
  nim->dz = nim->pixdim[3];
  nim->qto_xyz = nifti_quatern_to_mat44(qb, qc, qd, qx, qy, qz, nim->dx, nim->dy, nim->dz, qfac);
  nim->qto_ijk = nifti_mat44_inverse(nim->qto_xyz);
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->time_units = NIFTI_UNITS_SEC;
}

ndf_status read_series(const char *const *paths, int npaths, const ndfio_dicom_opts *o, ndfio_image *img,
                       char *err, size_t errlen) {
  std::vector<std::string> files;
  if (!list_files(paths, npaths, files, err, errlen)) return NDF_EIO;
  const std::string src = where(paths, npaths);
  gdcm::Scanner sc;
  for (const gdcm::Tag &t : {T_SERIES_UID, T_SERIES_NUMBER, T_SERIES_DESCR, T_MODALITY, T_IPP, T_IOP, T_SPACING,
                             T_ROWS, T_COLS, T_BITS_ALLOC, T_BITS_STORED, T_PIXREP, T_SAMPLES, T_INTERCEPT,
                             T_SLOPE, T_FRAMES, T_THICKNESS, T_BETWEEN})
    sc.AddTag(t);
  if (!files.empty() && !sc.Scan(files)) {
    errf(err, errlen, "cannot read %s: GDCM could not scan the files", src.c_str());
    return NDF_EIO;
  }
  /* The series, in the order of their SeriesNumber, then UID. */
  std::vector<Series> series;
  for (const std::string &f : files) {
    if (!sc.IsKey(f.c_str())) continue;  // not DICOM
    std::string uid = val(sc, f, T_SERIES_UID);
    if (uid.empty() || val(sc, f, T_ROWS).empty()) continue;  // no image (DICOMDIR, a report ...)
    auto it = std::find_if(series.begin(), series.end(), [&](const Series &s) { return s.uid == uid; });
    if (it == series.end()) {
      Series s;
      s.uid = uid;
      s.descr = val(sc, f, T_SERIES_DESCR);
      s.number_str = val(sc, f, T_SERIES_NUMBER);
      s.number = long_or(s.number_str, std::numeric_limits<long>::max());
      series.push_back(s);
      it = series.end() - 1;
    }
    it->files.push_back(f);
  }
  if (series.empty()) {
    errf(err, errlen, "cannot read %s: no DICOM image among its %zu file%s", src.c_str(), files.size(),
         files.size() == 1 ? "" : "s");
    return NDF_EINVAL;
  }
  std::stable_sort(series.begin(), series.end(), [](const Series &a, const Series &b) {
    return a.number != b.number ? a.number < b.number : a.uid < b.uid;
  });
  const Series *chosen = nullptr;
  if (o && o->series) {
    char *end;
    long idx = strtol(o->series, &end, 10);
    for (const Series &s : series)
      if (s.uid == o->series) chosen = &s;
    if (!chosen && !*end && idx >= 1 && (size_t)idx <= series.size() && !strchr(o->series, '.'))
      chosen = &series[(size_t)idx - 1];
  } else if (series.size() == 1) {
    chosen = &series[0];
  }
  if (!chosen) {
    std::string list;
    for (size_t i = 0; i < series.size(); i++) {
      const Series &s = series[i];
      char line[512];
      snprintf(line, sizeof line, "%s %zu: %s (series %s, \"%s\", %zu file%s, e.g. '%s')", i ? ";" : "", i + 1,
               s.uid.c_str(), s.number_str.empty() ? "-" : s.number_str.c_str(), s.descr.c_str(), s.files.size(),
               s.files.size() == 1 ? "" : "s", s.files[0].c_str());
      list += line;
    }
    if (o && o->series)
      errf(err, errlen, "cannot read %s: no series '%s' there; its series:%s", src.c_str(), o->series,
           list.c_str());
    else
      errf(err, errlen, "cannot read %s: it holds %zu series; choose one with --series UID or --series N:%s",
           src.c_str(), series.size(), list.c_str());
    return NDF_EINVAL;
  }

  /* Each file's geometry and pixel description; a multi-frame file's
   * frames are its slices. */
  std::vector<Slice> sl;
  for (const std::string &f : chosen->files) {
    Slice s;
    s.path = s.file = f;
    s.frame = 0;
    s.frames = long_or(val(sc, f, T_FRAMES), 1);
    if (s.frames < 1) s.frames = 1;
    s.rows = long_or(val(sc, f, T_ROWS), 0);
    s.cols = long_or(val(sc, f, T_COLS), 0);
    s.bits_alloc = long_or(val(sc, f, T_BITS_ALLOC), 0);
    s.bits_stored = long_or(val(sc, f, T_BITS_STORED), s.bits_alloc);
    s.pixrep = long_or(val(sc, f, T_PIXREP), 0);
    s.samples = long_or(val(sc, f, T_SAMPLES), 1);
    if (s.samples != 1) {
      errf(err, errlen, "cannot read '%s': %ld samples per pixel (colour); only greyscale series are read",
           f.c_str(), s.samples);
      return NDF_EINVAL;
    }
    if (s.rows < 1 || s.cols < 1 || s.bits_stored < 1 || s.bits_stored > s.bits_alloc || s.bits_alloc > 32) {
      errf(err, errlen, "cannot read '%s': Rows %ld, Columns %ld, BitsAllocated %ld, BitsStored %ld are not "
           "supported", f.c_str(), s.rows, s.cols, s.bits_alloc, s.bits_stored);
      return NDF_EINVAL;
    }
    if (s.frames > 1) {
      if (chosen->files.size() > 1) {
        errf(err, errlen, "cannot read series %s of %s: '%s' is a multi-frame file (%ld frames) among %zu files; "
             "a multi-frame series is read from one file", chosen->uid.c_str(), src.c_str(), f.c_str(), s.frames,
             chosen->files.size());
        return NDF_EINVAL;
      }
      if (!frames_of(s, sl, err, errlen)) return NDF_EINVAL;
      continue;
    }
    const char *missing = nullptr;
    if (!parse_numbers(val(sc, f, T_IPP), 3, s.ipp)) missing = "ImagePositionPatient";
    else if (!parse_numbers(val(sc, f, T_IOP), 6, s.iop)) missing = "ImageOrientationPatient";
    else if (!parse_numbers(val(sc, f, T_SPACING), 2, s.spacing) || !(s.spacing[0] > 0 && s.spacing[1] > 0))
      missing = "PixelSpacing";
    if (missing) {
      errf(err, errlen, "cannot read '%s': no valid %s (a volume needs the image plane's geometry)", f.c_str(),
           missing);
      return NDF_EINVAL;
    }
    s.slope = double_or(val(sc, f, T_SLOPE), 1.0);
    s.intercept = double_or(val(sc, f, T_INTERCEPT), 0.0);
    if (s.slope == 0) s.slope = 1.0;  // a zero slope would erase the image: taken as missing
    sl.push_back(s);
  }
  /* One geometry for all: the first file (by name) is the reference. */
  const Slice &ref = sl[0];
  struct Check {
    const char *what;
    bool (*same)(const Slice &, const Slice &);
    std::string (*show)(const Slice &);
  };
  const Check checks[] = {
      {"ImageOrientationPatient",
       [](const Slice &a, const Slice &b) {
         for (int i = 0; i < 6; i++)
           if (std::fabs(a.iop[i] - b.iop[i]) > 1e-4) return false;
         return true;
       },
       [](const Slice &a) {
         char b[160];
         snprintf(b, sizeof b, "%.6g\\%.6g\\%.6g\\%.6g\\%.6g\\%.6g", a.iop[0], a.iop[1], a.iop[2], a.iop[3],
                  a.iop[4], a.iop[5]);
         return std::string(b);
       }},
      {"PixelSpacing",
       [](const Slice &a, const Slice &b) {
         return close_rel(a.spacing[0], b.spacing[0], 1e-4) && close_rel(a.spacing[1], b.spacing[1], 1e-4);
       },
       [](const Slice &a) {
         char b[80];
         snprintf(b, sizeof b, "%.6g\\%.6g", a.spacing[0], a.spacing[1]);
         return std::string(b);
       }},
      {"Rows x Columns", [](const Slice &a, const Slice &b) { return a.rows == b.rows && a.cols == b.cols; },
       [](const Slice &a) { return std::to_string(a.rows) + " x " + std::to_string(a.cols); }},
      {"BitsAllocated/BitsStored/PixelRepresentation",
       [](const Slice &a, const Slice &b) {
         return a.bits_alloc == b.bits_alloc && a.bits_stored == b.bits_stored && a.pixrep == b.pixrep;
       },
       [](const Slice &a) {
         return std::to_string(a.bits_alloc) + "/" + std::to_string(a.bits_stored) + "/" + std::to_string(a.pixrep);
       }},
  };
  for (const Check &c : checks) {
    std::vector<const Slice *> odd;
    for (const Slice &s : sl)
      if (!c.same(ref, s)) odd.push_back(&s);
    if (!odd.empty()) {
      errf(err, errlen, "cannot read series %s of %s: inconsistent %s: %s in '%s', %s in %s", chosen->uid.c_str(),
           src.c_str(), c.what, c.show(ref).c_str(), ref.path.c_str(), c.show(*odd[0]).c_str(),
           name_files(odd).c_str());
      return NDF_EINVAL;
    }
  }
  /* The slice normal n = r x c, and each position along it (the reference
   * copied first: the slices are sorted next). */
  const Slice ref0 = ref;
  const double *r = ref0.iop, *c = ref0.iop + 3;
  double nrm[3] = {r[1] * c[2] - r[2] * c[1], r[2] * c[0] - r[0] * c[2], r[0] * c[1] - r[1] * c[0]};
  const double nlen = std::sqrt(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2]);
  if (!(nlen > 0.5)) {
    errf(err, errlen, "cannot read '%s': ImageOrientationPatient's row and column cosines are not orthogonal "
         "unit vectors", ref0.path.c_str());
    return NDF_EINVAL;
  }
  for (double &v : nrm) v /= nlen;
  for (Slice &s : sl) s.pos = s.ipp[0] * nrm[0] + s.ipp[1] * nrm[1] + s.ipp[2] * nrm[2];
  std::stable_sort(sl.begin(), sl.end(), [](const Slice &a, const Slice &b) { return a.pos < b.pos; });
  const size_t nz = sl.size();
  const double tol = o && o->gap_tolerance >= 0 ? o->gap_tolerance : 0.01;
  if (nz > 1) {
    std::vector<double> gaps(nz - 1);
    for (size_t k = 0; k + 1 < nz; k++) gaps[k] = sl[k + 1].pos - sl[k].pos;
    std::vector<double> sorted = gaps;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double med = sorted[sorted.size() / 2];
    const double inplane = std::min(ref0.spacing[0], ref0.spacing[1]);
    for (size_t k = 0; k + 1 < nz; k++) {
      if (gaps[k] <= 1e-3 * inplane) {
        errf(err, errlen, "cannot read series %s of %s: '%s' and '%s' are at one position (%.6g mm along the "
             "slice normal); a series of several volumes (time points, echoes) is not read as one",
             chosen->uid.c_str(), src.c_str(), sl[k].path.c_str(), sl[k + 1].path.c_str(), sl[k].pos);
        return NDF_EINVAL;
      }
    }
    for (size_t k = 0; k + 1 < nz; k++) {
      if (std::fabs(gaps[k] - med) <= tol * med) continue;
      double m = gaps[k] / med;
      if (std::fabs(m - std::round(m)) <= tol * std::round(m) && std::round(m) >= 2)
        errf(err, errlen, "cannot read series %s of %s: %.0f slice%s missing between '%s' and '%s' (a gap of "
             "%.6g mm, the median gap is %.6g mm)", chosen->uid.c_str(), src.c_str(), std::round(m) - 1,
             std::round(m) - 1 == 1 ? "" : "s", sl[k].path.c_str(), sl[k + 1].path.c_str(), gaps[k], med);
      else
        errf(err, errlen, "cannot read series %s of %s: uneven slice gap between '%s' and '%s' (%.6g mm, the "
             "median gap is %.6g mm; the tolerance is %g of it, --gap-tolerance)", chosen->uid.c_str(),
             src.c_str(), sl[k].path.c_str(), sl[k + 1].path.c_str(), gaps[k], med, tol);
      return NDF_EINVAL;
    }
  }

  /* The affine, LPS: columns dc * r, dr * c, the slice step; origin P0. */
  double step[3];
  if (nz > 1) {
    for (int i = 0; i < 3; i++) step[i] = (sl[nz - 1].ipp[i] - sl[0].ipp[i]) / (double)(nz - 1);
  } else {
    double dz = double_or(val(sc, ref0.file, T_BETWEEN), 0);
    if (!(dz > 0)) dz = double_or(val(sc, ref0.file, T_THICKNESS), 1.0);
    if (!(dz > 0)) dz = 1.0;
    for (int i = 0; i < 3; i++) step[i] = dz * nrm[i];
  }
  double A[4][4] = {{0}};
  for (int i = 0; i < 3; i++) {
    A[i][0] = ref0.spacing[1] * r[i];
    A[i][1] = ref0.spacing[0] * c[i];
    A[i][2] = step[i];
    A[i][3] = sl[0].ipp[i];
  }
  A[3][3] = 1;
  for (int j = 0; j < 4; j++) {  // LPS -> RAS, and no -0 in the header
    A[0][j] = -A[0][j] + 0.0;
    A[1][j] = -A[1][j] + 0.0;
    A[2][j] += 0.0;
  }

  /* The stored values, slice by slice, into a buffer of their type; then,
   * where slices are rescaled, the values and the dtype (in place when
   * int16 replaces a 16-bit type). */
  const size_t nx = (size_t)ref0.cols, ny = (size_t)ref0.rows, plane = nx * ny;
  if (nx > 32767 || ny > 32767 || nz > 32767) {
    errf(err, errlen, "cannot read %s: %zu x %zu x %zu voxels exceed NIfTI-1's 32767 per axis", src.c_str(), nx,
         ny, nz);
    return NDF_EINVAL;
  }
  const ndf_dtype st = stored_dtype(ref0.bits_stored, ref0.pixrep == 1);
  const size_t ssz = ndf_dtype_size(st), n = plane * nz;
  char *data = static_cast<char *>(malloc(n * ssz));
  if (!data) {
    errf(err, errlen, "cannot read %s: out of memory for %zu voxels", src.c_str(), n);
    return NDF_ENOMEM;
  }
  std::vector<double> v(plane);
  Decoded dec;
  bool rescaled = false, integral = true;
  double lo = INFINITY, hi = -INFINITY;  // of the rescaled values
  for (size_t k = 0; k < nz; k++) {
    if (!read_pixels(sl[k], dec, v.data(), err, errlen)) {
      free(data);
      return NDF_EINVAL;
    }
    put_values(data + k * plane * ssz, st, v.data(), plane);
    const double a = sl[k].slope, b = sl[k].intercept;
    if (a != 1.0 || b != 0.0) rescaled = true;
    if (a != std::floor(a) || b != std::floor(b)) integral = false;
    auto mm = std::minmax_element(v.begin(), v.end());
    lo = std::min(lo, std::min(*mm.first * a + b, *mm.second * a + b));
    hi = std::max(hi, std::max(*mm.first * a + b, *mm.second * a + b));
  }
  ndf_dtype dt = st;
  if (rescaled) {
    dt = integral && lo >= -32768.0 && hi <= 32767.0 ? NDF_INT16 : NDF_FLOAT32;
    const size_t osz = ndf_dtype_size(dt);
    char *out = osz == ssz ? data : static_cast<char *>(malloc(n * osz));
    if (!out) {
      free(data);
      errf(err, errlen, "cannot read %s: out of memory for %zu voxels", src.c_str(), n);
      return NDF_ENOMEM;
    }
    for (size_t k = 0; k < nz; k++) {  // each element read before it is overwritten
      get_values(data + k * plane * ssz, st, v.data(), plane);
      for (double &x : v) x = x * sl[k].slope + sl[k].intercept;
      put_values(out + k * plane * osz, dt, v.data(), plane);
    }
    if (out != data) free(data);
    data = out;
  }

  int dims[8] = {3, (int)nx, (int)ny, (int)nz, 1, 1, 1, 1};
  nifti_set_debug_level(0);
  nifti_image *nim = nifti_make_new_nim(dims, nifti_code(dt), 0);
  if (!nim) {
    free(data);
    errf(err, errlen, "cannot read %s: out of memory", src.c_str());
    return NDF_ENOMEM;
  }
  set_affine(nim, A);
  std::string d = chosen->descr.empty() ? val(sc, ref0.file, T_MODALITY) : chosen->descr;
  snprintf(nim->descrip, sizeof nim->descrip, "%s", d.c_str());
  ndf_array &a = img->arr;
  a.device = NDF_DEVICE_CPU;
  a.device_id = 0;
  a.dtype = dt;
  a.ndim = 3;
  a.shape[0] = (int64_t)nx;
  a.shape[1] = (int64_t)ny;
  a.shape[2] = (int64_t)nz;
  a.strides[0] = 1;
  a.strides[1] = (int64_t)nx;
  a.strides[2] = (int64_t)plane;
  a.data = data;
  img->owned = data;
  img->nifti = nim;
  return NDF_OK;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

/* A DS value of at most 16 characters, as precise as fits. */
std::string ds(double v) {
  if (v == 0) return "0";
  char b[64];
  for (int p = 16; p >= 1; p--) {
    snprintf(b, sizeof b, "%.*g", p, v);
    if (strlen(b) <= 16) return b;
  }
  return "0";
}

void put(gdcm::DataSet &dsx, const gdcm::Tag &t, gdcm::VR vr, std::string s) {
  if (s.size() % 2) s += (vr == gdcm::VR::UI ? '\0' : ' ');
  gdcm::DataElement de(t);
  de.SetVR(vr);
  de.SetByteValue(s.data(), (uint32_t)s.size());
  dsx.Replace(de);
}

void put_us(gdcm::DataSet &dsx, const gdcm::Tag &t, uint16_t v) {
  gdcm::DataElement de(t);
  de.SetVR(gdcm::VR::US);
  de.SetByteValue(reinterpret_cast<const char *>(&v), 2);  // little endian host
  dsx.Replace(de);
}

/* a's element i as a double (host array, any strides, Fortran index order). */
struct Elems {
  const ndf_array *a;
  double at(int64_t x, int64_t y, int64_t z) const {
    const char *p = (const char *)a->data +
                    (x * a->strides[0] + y * a->strides[1] + z * a->strides[2]) * (int64_t)ndf_dtype_size(a->dtype);
    switch (a->dtype) {
    case NDF_BOOL: case NDF_UINT8: return *(const uint8_t *)p;
    case NDF_INT8: return *(const int8_t *)p;
    case NDF_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case NDF_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case NDF_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case NDF_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case NDF_FLOAT32: { float v; memcpy(&v, p, 4); return v; }
    default: { double v; memcpy(&v, p, 8); return v; }
    }
  }
};

bool remove_tree(const std::string &dir) {
  DIR *d = opendir(dir.c_str());
  if (d) {
    while (struct dirent *e = readdir(d)) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      unlink((dir + "/" + e->d_name).c_str());
    }
    closedir(d);
  }
  return rmdir(dir.c_str()) == 0;
}

ndf_status write_series(const char *dir, const ndfio_image *img, const char *descrip, int *quantized, char *err,
                        size_t errlen) {
  const ndf_array *a = &img->arr;
  if (a->ndim != 3 && !(a->ndim == 4 && a->shape[3] == 1)) {
    errf(err, errlen, "cannot write '%s': a DICOM series holds one 3-D volume, the image has %d axes", dir,
         a->ndim);
    return NDF_EINVAL;
  }
  if (a->device != NDF_DEVICE_CPU || !a->data) {
    errf(err, errlen, "cannot write '%s': no host data", dir);
    return NDF_EINVAL;
  }
  const int64_t nx = a->shape[0], ny = a->shape[1], nz = a->shape[2];
  if (nx < 1 || ny < 1 || nz < 1 || nx > 65535 || ny > 65535) {
    errf(err, errlen, "cannot write '%s': %lld x %lld x %lld voxels do not make DICOM images", dir, (long long)nx,
         (long long)ny, (long long)nz);
    return NDF_EINVAL;
  }
  /* The affine (RAS) as nifti_clib reads it: sform, else qform (which is
   * pixdim alone when qform_code is 0). */
  double A[4][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
  if (const nifti_image *nim = (const nifti_image *)img->nifti) {
    const mat44 &m = nim->sform_code > 0 ? nim->sto_xyz : nim->qto_xyz;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) A[i][j] = m.m[i][j];
  }
  for (int j = 0; j < 4; j++) {  // RAS -> LPS
    A[0][j] = -A[0][j];
    A[1][j] = -A[1][j];
  }
  double len[3], r[3], c[3];
  for (int j = 0; j < 3; j++) len[j] = std::sqrt(A[0][j] * A[0][j] + A[1][j] * A[1][j] + A[2][j] * A[2][j]);
  if (!(len[0] > 0 && len[1] > 0 && len[2] > 0)) {
    errf(err, errlen, "cannot write '%s': the image's affine is singular", dir);
    return NDF_EINVAL;
  }
  for (int i = 0; i < 3; i++) {
    r[i] = A[i][0] / len[0];
    c[i] = A[i][1] / len[1];
  }
  if (std::fabs(r[0] * c[0] + r[1] * c[1] + r[2] * c[2]) > 1e-4) {
    errf(err, errlen, "cannot write '%s': the affine's x and y axes are not orthogonal (DICOM's image plane "
         "needs a rectangular pixel grid)", dir);
    return NDF_EINVAL;
  }
  /* Values: a NIfTI scaling (scl_slope != 0, not 1 and 0) makes world
   * values s * v + b.  Stored values v are written as they are when they are
   * integers of uint16 or int16 (with s and b as RescaleSlope and
   * RescaleIntercept); otherwise the world values are quantized to int16
   * with a slope and intercept of their own. */
  double s = 1, b = 0;
  if (const nifti_image *nim = (const nifti_image *)img->nifti)
    if (nim->scl_slope != 0 && std::isfinite(nim->scl_slope) && std::isfinite(nim->scl_inter)) {
      s = nim->scl_slope;
      b = nim->scl_inter;
    }
  const Elems el{a};
  double lo = INFINITY, hi = -INFINITY;
  bool integral = true;
  for (int64_t z = 0; z < nz; z++)
    for (int64_t y = 0; y < ny; y++)
      for (int64_t x = 0; x < nx; x++) {
        double v = el.at(x, y, z);
        if (!std::isfinite(v)) {
          errf(err, errlen, "cannot write '%s': the image has NaN or infinite values", dir);
          return NDF_EINVAL;
        }
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        if (v != std::floor(v)) integral = false;
      }
  bool sgn = lo < 0, rescale = s != 1 || b != 0, quant = false;
  unsigned bits = 16;
  double slope = s, inter = b;
  if (a->dtype == NDF_UINT8 || a->dtype == NDF_INT8 || a->dtype == NDF_BOOL) bits = 8;
  if (a->dtype == NDF_INT8 || a->dtype == NDF_INT16) sgn = true;
  if (!integral || (sgn ? (lo < -32768 || hi > 32767) : hi > 65535)) {
    quant = rescale = true;
    sgn = true;
    bits = 16;
    const double wlo = std::min(s * lo + b, s * hi + b), whi = std::max(s * lo + b, s * hi + b);
    inter = (wlo + whi) / 2;
    slope = whi > wlo ? (whi - wlo) / 65534.0 : 1.0;
  }
  if (quantized) *quantized = quant;

  /* A new, empty directory next to dir, renamed into place at the end. */
  struct stat st;
  if (stat(dir, &st) == 0) {
    bool empty = false;
    if (S_ISDIR(st.st_mode)) {
      DIR *d = opendir(dir);
      empty = d != nullptr;
      while (d && empty)
        if (struct dirent *e = readdir(d)) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        else break;
      if (d) closedir(d);
    }
    if (!empty) {
      errf(err, errlen, "cannot write the DICOM series '%s': it exists and is not an empty directory", dir);
      return NDF_EIO;
    }
  }
  std::string out(dir);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  size_t slash = out.rfind('/');
  std::string parent = slash == std::string::npos ? "." : out.substr(0, slash + 1);
  std::string tmpl = parent + (slash == std::string::npos ? "/" : "") + ".ndftmp-dicom-XXXXXX";
  std::vector<char> tb(tmpl.begin(), tmpl.end());
  tb.push_back('\0');
  if (!mkdtemp(tb.data())) {
    errf(err, errlen, "cannot write the DICOM series '%s': %s", dir, strerror(errno));
    return NDF_EIO;
  }
  const std::string tmp(tb.data());

  std::string descr = descrip ? descrip : img->nifti ? ((const nifti_image *)img->nifti)->descrip : "";
  descr = trim(descr.substr(0, 64).c_str());
  gdcm::UIDGenerator gen;
  const std::string study = gen.Generate(), series = gen.Generate(), frame = gen.Generate();
  std::string iop;
  for (int i = 0; i < 6; i++) iop += (i ? "\\" : "") + ds(i < 3 ? r[i] : c[i - 3]);
  const std::string spacing = ds(len[1]) + "\\" + ds(len[0]);
  std::vector<char> pix((size_t)(nx * ny) * 2);  // BitsAllocated 16
  for (int64_t z = 0; z < nz; z++) {
    gdcm::Writer w;
    gdcm::File &f = w.GetFile();
    f.GetHeader().SetDataSetTransferSyntax(gdcm::TransferSyntax::ExplicitVRLittleEndian);
    gdcm::DataSet &d = f.GetDataSet();
    put(d, gdcm::Tag(0x0008, 0x0016), gdcm::VR::UI, "1.2.840.10008.5.1.4.1.1.4");  // MR Image Storage
    put(d, gdcm::Tag(0x0008, 0x0018), gdcm::VR::UI, gen.Generate());
    put(d, gdcm::Tag(0x0008, 0x0060), gdcm::VR::CS, "MR");
    put(d, T_SERIES_DESCR, gdcm::VR::LO, descr);
    put(d, gdcm::Tag(0x0010, 0x0010), gdcm::VR::PN, "");
    put(d, gdcm::Tag(0x0010, 0x0020), gdcm::VR::LO, "");
    put(d, gdcm::Tag(0x0020, 0x000d), gdcm::VR::UI, study);
    put(d, T_SERIES_UID, gdcm::VR::UI, series);
    put(d, gdcm::Tag(0x0020, 0x0052), gdcm::VR::UI, frame);
    put(d, T_SERIES_NUMBER, gdcm::VR::IS, "1");
    put(d, gdcm::Tag(0x0020, 0x0013), gdcm::VR::IS, std::to_string(z + 1));
    double p[3];
    for (int i = 0; i < 3; i++) p[i] = A[i][3] + z * A[i][2];
    put(d, T_IPP, gdcm::VR::DS, ds(p[0]) + "\\" + ds(p[1]) + "\\" + ds(p[2]));
    put(d, T_IOP, gdcm::VR::DS, iop);
    put(d, T_THICKNESS, gdcm::VR::DS, ds(len[2]));
    put_us(d, T_SAMPLES, 1);
    put(d, gdcm::Tag(0x0028, 0x0004), gdcm::VR::CS, "MONOCHROME2");
    put_us(d, T_ROWS, (uint16_t)ny);
    put_us(d, T_COLS, (uint16_t)nx);
    put(d, T_SPACING, gdcm::VR::DS, spacing);
    put_us(d, T_BITS_ALLOC, 16);
    put_us(d, T_BITS_STORED, (uint16_t)bits);
    put_us(d, gdcm::Tag(0x0028, 0x0102), (uint16_t)(bits - 1));
    put_us(d, T_PIXREP, sgn ? 1 : 0);
    if (rescale) {
      put(d, T_INTERCEPT, gdcm::VR::DS, ds(inter));
      put(d, T_SLOPE, gdcm::VR::DS, ds(slope));
    }
    for (int64_t y = 0; y < ny; y++)
      for (int64_t x = 0; x < nx; x++) {
        double v = el.at(x, y, z);
        if (quant) v = std::round((s * v + b - inter) / slope);
        uint16_t u = sgn ? (uint16_t)(int16_t)v : (uint16_t)v;
        if (bits == 8) u &= 0xff;  // int8 in 8 stored bits (two's complement)
        memcpy(&pix[(size_t)(y * nx + x) * 2], &u, 2);
      }
    gdcm::DataElement pd(gdcm::Tag(0x7fe0, 0x0010));
    pd.SetVR(gdcm::VR::OW);
    pd.SetByteValue(pix.data(), (uint32_t)pix.size());
    d.Replace(pd);
    char name[32];
    snprintf(name, sizeof name, "/IM%05lld.dcm", (long long)z + 1);
    std::string path = tmp + name;
    w.SetFileName(path.c_str());
    if (!w.Write()) {
      remove_tree(tmp);
      errf(err, errlen, "cannot write the DICOM series '%s': writing '%s' failed", dir, path.c_str());
      return NDF_EIO;
    }
  }
  if (rename(tmp.c_str(), out.c_str()) != 0) {
    int e = errno;
    remove_tree(tmp);
    errf(err, errlen, "cannot write the DICOM series '%s': %s", dir, strerror(e));
    return NDF_EIO;
  }
  return NDF_OK;
}

}  // namespace

extern "C" ndf_status ndfio_dicom_read(const char *const *paths, int npaths, const ndfio_dicom_opts *o,
                                       ndfio_image *img, char *err, size_t errlen) {
  if (!img || !paths || npaths < 1) {
    errf(err, errlen, "ndfio_dicom_read: no path or image given");
    return NDF_EINVAL;
  }
  memset(img, 0, sizeof *img);
  gdcm::Trace::SetWarning(false);
  gdcm::Trace::SetError(false);
  gdcm::Trace::SetDebug(false);
  try {
    return read_series(paths, npaths, o, img, err, errlen);
  } catch (const std::bad_alloc &) {
    errf(err, errlen, "cannot read %s: out of memory", paths[0]);
    return NDF_ENOMEM;
  } catch (const std::exception &e) {
    errf(err, errlen, "cannot read %s: %s", paths[0], e.what());
    return NDF_EINVAL;
  }
}

extern "C" ndf_status ndfio_dicom_write(const char *dir, const ndfio_image *img, const char *descrip,
                                        int *quantized, char *err, size_t errlen) {
  if (!img || !dir) {
    errf(err, errlen, "ndfio_dicom_write: no path or image given");
    return NDF_EINVAL;
  }
  gdcm::Trace::SetWarning(false);
  gdcm::Trace::SetError(false);
  try {
    return write_series(dir, img, descrip, quantized, err, errlen);
  } catch (const std::bad_alloc &) {
    errf(err, errlen, "cannot write '%s': out of memory", dir);
    return NDF_ENOMEM;
  } catch (const std::exception &e) {
    errf(err, errlen, "cannot write '%s': %s", dir, e.what());
    return NDF_EIO;
  }
}
