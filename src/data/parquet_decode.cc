// Parquet pages' bytes to values: decompression (snappy, gzip, zstd through Debian's libraries),
// the RLE / bit-packed hybrid, and the value encodings pyarrow writes for flat columns.
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <charconv>
#include <cstring>

#include "data/parquet_format.h"
#include "tach/error.h"

namespace tach::data::parquet {

namespace {

// A cursor over a page's bytes; every read is bounds-checked and a short page is an error.
struct Cursor {
  const uint8_t* p;
  size_t n, at = 0;
  const std::string& where;
  void need(size_t k) const {
    check(k <= n - at, where + ": a page ends early (needs " + std::to_string(k) + " more bytes at offset " +
                           std::to_string(at) + " of " + std::to_string(n) + ")");
  }
  uint8_t byte() {
    need(1);
    return p[at++];
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = byte();
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw Error(where + ": a varint longer than 64 bits");
  }
  int64_t zigzag() {
    const uint64_t v = uleb();
    return int64_t(v >> 1) ^ -int64_t(v & 1);
  }
  uint32_t le32() {
    need(4);
    uint32_t v;
    std::memcpy(&v, p + at, 4);
    at += 4;
    return v;
  }
};

// `count` values of `width` bits, packed least significant bit first (Parquet's bit packing).
void unpack(Cursor& c, int width, size_t count, std::vector<uint64_t>& out) {
  check(width >= 0 && width <= 64, c.where + ": a bit width of " + std::to_string(width));
  const size_t bytes = (count * size_t(width) + 7) / 8;
  c.need(bytes);
  const uint8_t* base = c.p + c.at;
  for (size_t i = 0; i < count; ++i) {
    uint64_t v = 0;
    const size_t bit = i * size_t(width);
    for (int b = 0; b < width; ++b) v |= uint64_t((base[(bit + b) / 8] >> ((bit + b) % 8)) & 1) << b;
    out.push_back(v);
  }
  c.at += bytes;
}

std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // the shortest text that reads back the same
  return std::string(buf, r.ptr);
}

// DELTA_BINARY_PACKED: a header, then blocks of a minimum delta and bit-packed miniblocks. Reads
// `count` values (or the header's count when count is SIZE_MAX) and leaves the cursor after the
// last miniblock holding one.
std::vector<int64_t> delta_binary_packed(Cursor& c, size_t count) {
  const uint64_t block = c.uleb(), miniblocks = c.uleb(), total = c.uleb();
  int64_t value = c.zigzag();
  check(block > 0 && block % 128 == 0 && miniblocks > 0 && block % miniblocks == 0 && (block / miniblocks) % 32 == 0,
        c.where + ": a DELTA_BINARY_PACKED header with block " + std::to_string(block) + " and " +
            std::to_string(miniblocks) + " miniblocks");
  if (count == SIZE_MAX) count = size_t(total);
  check(total >= count, c.where + ": DELTA_BINARY_PACKED holds " + std::to_string(total) + " values, the page " +
                            std::to_string(count));
  std::vector<int64_t> out;
  out.reserve(count);
  if (count > 0) out.push_back(value);
  const size_t per_mini = size_t(block / miniblocks);
  std::vector<uint64_t> packed;
  while (out.size() < count) {
    const int64_t min_delta = c.zigzag();
    c.need(size_t(miniblocks));
    std::vector<int> widths(static_cast<size_t>(miniblocks));
    for (auto& w : widths) w = c.byte();
    for (size_t m = 0; m < widths.size() && out.size() < count; ++m) {
      packed.clear();
      unpack(c, widths[m], per_mini, packed);
      for (size_t i = 0; i < per_mini && out.size() < count; ++i) {
        value = int64_t(uint64_t(value) + uint64_t(min_delta) + packed[i]);  // wraps, as the writer's did
        out.push_back(value);
      }
    }
  }
  return out;
}

}  // namespace

const char* codec_name(int32_t codec) {
  switch (codec) {
    case kUncompressed: return "none";
    case kSnappy: return "snappy";
    case kGzip: return "gzip";
    case kLzo: return "lzo";
    case kBrotli: return "brotli";
    case kLz4: return "lz4 (Hadoop framing)";
    case kZstd: return "zstd";
    case kLz4Raw: return "lz4_raw";
    default: return "unknown";
  }
}

std::string decompress(int32_t codec, const uint8_t* data, size_t size, size_t uncompressed_size,
                       const std::string& where) {
  // Pages are at most a few MiB; a header claiming more than 1 GiB is corrupt, not a big page.
  check(uncompressed_size <= (size_t(1) << 30),
        where + ": a page claims " + std::to_string(uncompressed_size) + " bytes uncompressed");
  std::string out(uncompressed_size, '\0');
  auto dst = reinterpret_cast<char*>(out.data());
  auto src = reinterpret_cast<const char*>(data);
  switch (codec) {
    case kUncompressed:
      check(size == uncompressed_size, where + ": an uncompressed page of " + std::to_string(size) +
                                           " bytes whose header says " + std::to_string(uncompressed_size));
      std::memcpy(dst, src, size);
      return out;
    case kSnappy: {
      size_t n = 0;
      check(
          snappy_uncompressed_length(src, size, &n) == SNAPPY_OK && n == uncompressed_size &&
              snappy_uncompress(src, size, dst, &n) == SNAPPY_OK && n == uncompressed_size,
          where + ": a snappy page does not decompress to its stated " + std::to_string(uncompressed_size) + " bytes");
      return out;
    }
    case kZstd: {
      const size_t n = ZSTD_decompress(dst, out.size(), src, size);
      check(!ZSTD_isError(n) && n == uncompressed_size,
            where + ": a zstd page does not decompress to its stated size" +
                (ZSTD_isError(n) ? std::string(" (") + ZSTD_getErrorName(n) + ")" : std::string()));
      return out;
    }
    case kGzip: {
      z_stream z{};
      check(inflateInit2(&z, 15 + 32) == Z_OK, where + ": zlib would not start");  // gzip or zlib framing
      z.next_in = const_cast<Bytef*>(data);
      z.avail_in = uInt(size);
      z.next_out = reinterpret_cast<Bytef*>(dst);
      z.avail_out = uInt(out.size());
      const int rc = inflate(&z, Z_FINISH);
      const size_t n = z.total_out;
      inflateEnd(&z);
      check(rc == Z_STREAM_END && n == uncompressed_size,
            where + ": a gzip page does not decompress to its stated size");
      return out;
    }
    default:
      throw Error(where + ": pages compressed with " + codec_name(codec) +
                  "; tach reads Parquet compressed with snappy, gzip, zstd or none (rewrite it with one of "
                  "those, e.g. pyarrow.parquet.write_table(t, path, compression='zstd'))");
  }
}

std::vector<uint32_t> read_hybrid(const uint8_t* data, size_t size, int bit_width, size_t count,
                                  const std::string& where) {
  check(bit_width >= 0 && bit_width <= 32, where + ": a level or index bit width of " + std::to_string(bit_width));
  Cursor c{data, size, 0, where};
  std::vector<uint32_t> out;
  out.reserve(count);
  std::vector<uint64_t> packed;
  while (out.size() < count) {
    const uint64_t header = c.uleb();
    if (header & 1) {  // bit-packed: groups of 8 values
      const uint64_t groups = header >> 1;
      check(groups > 0 && groups <= (count - out.size() + 7) / 8 + 1,
            where + ": a bit-packed run of " + std::to_string(groups) + " groups");
      packed.clear();
      unpack(c, bit_width, size_t(groups) * 8, packed);
      for (size_t i = 0; i < packed.size() && out.size() < count; ++i) out.push_back(uint32_t(packed[i]));
    } else {  // a run of one value, in ceil(width / 8) bytes
      const uint64_t run = header >> 1;
      check(run > 0, where + ": an RLE run of length 0");
      uint32_t v = 0;
      for (int b = 0; b < (bit_width + 7) / 8; ++b) v |= uint32_t(c.byte()) << (8 * b);
      for (uint64_t i = 0; i < run && out.size() < count; ++i) out.push_back(v);
    }
  }
  return out;
}

std::vector<std::string> ValueReader::plain(const uint8_t* data, size_t size, size_t count) const {
  Cursor c{data, size, 0, where};
  std::vector<std::string> out;
  out.reserve(std::min(count, size));
  auto fixed = [&](size_t width, auto render) {
    c.need(count * width);
    for (size_t i = 0; i < count; ++i) out.push_back(render(c.p + c.at + i * width));
    c.at += count * width;
  };
  switch (type) {
    case kBoolean:
      c.need((count + 7) / 8);
      for (size_t i = 0; i < count; ++i) out.push_back((c.p[i / 8] >> (i % 8)) & 1 ? "true" : "false");
      break;
    case kInt32:
      fixed(4, [&](const uint8_t* p) {
        int32_t v;
        std::memcpy(&v, p, 4);
        return unsigned_int ? std::to_string(uint32_t(v)) : std::to_string(v);
      });
      break;
    case kInt64:
      fixed(8, [&](const uint8_t* p) {
        int64_t v;
        std::memcpy(&v, p, 8);
        return unsigned_int ? std::to_string(uint64_t(v)) : std::to_string(v);
      });
      break;
    case kFloat:
      fixed(4, [](const uint8_t* p) {
        float v;
        std::memcpy(&v, p, 4);
        char buf[32];
        return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
      });
      break;
    case kDouble:
      fixed(8, [](const uint8_t* p) {
        double v;
        std::memcpy(&v, p, 8);
        return number_text(v);
      });
      break;
    case kByteArray:
      for (size_t i = 0; i < count; ++i) {
        const uint32_t len = c.le32();
        c.need(len);
        out.emplace_back(reinterpret_cast<const char*>(c.p + c.at), len);
        c.at += len;
      }
      break;
    case kFixedLenByteArray:
      check(type_length > 0, where + ": a FIXED_LEN_BYTE_ARRAY column without a length");
      fixed(size_t(type_length),
            [&](const uint8_t* p) { return std::string(reinterpret_cast<const char*>(p), size_t(type_length)); });
      break;
    default:
      throw Error(where +
                  ": INT96 (legacy timestamp) columns are not read; tach reads strings, integers, "
                  "floats and booleans");
  }
  return out;
}

std::vector<std::string> ValueReader::decode(int32_t encoding, const uint8_t* data, size_t size, size_t count,
                                             const std::vector<std::string>* dictionary) const {
  switch (encoding) {
    case kPlain: return plain(data, size, count);
    case kPlainDictionary:
    case kRleDictionary: {
      check(dictionary != nullptr, where + ": a dictionary-encoded page without a dictionary page before it");
      check(size >= 1 || count == 0, where + ": a dictionary-encoded page without its bit width");
      if (count == 0) return {};
      const auto ids = read_hybrid(data + 1, size - 1, data[0], count, where);
      std::vector<std::string> out;
      out.reserve(count);
      for (uint32_t id : ids) {
        check(id < dictionary->size(), where + ": dictionary index " + std::to_string(id) + " of a dictionary of " +
                                           std::to_string(dictionary->size()));
        out.push_back((*dictionary)[id]);
      }
      return out;
    }
    case kRle: {  // booleans: a 4-byte length, then the hybrid at bit width 1
      check(type == kBoolean, where + ": RLE-encoded values of a type other than boolean");
      Cursor c{data, size, 0, where};
      const uint32_t len = c.le32();
      c.need(len);
      std::vector<std::string> out;
      for (uint32_t v : read_hybrid(data + 4, len, 1, count, where)) out.push_back(v ? "true" : "false");
      return out;
    }
    case kDeltaBinaryPacked: {
      check(type == kInt32 || type == kInt64, where + ": DELTA_BINARY_PACKED values of a type other than an integer");
      Cursor c{data, size, 0, where};
      std::vector<std::string> out;
      for (int64_t v : delta_binary_packed(c, count))
        out.push_back(type == kInt32 ? (unsigned_int ? std::to_string(uint32_t(v)) : std::to_string(int32_t(v)))
                                     : (unsigned_int ? std::to_string(uint64_t(v)) : std::to_string(v)));
      return out;
    }
    case kDeltaLengthByteArray:
    case kDeltaByteArray: {
      Cursor c{data, size, 0, where};
      std::vector<int64_t> prefixes;
      if (encoding == kDeltaByteArray) prefixes = delta_binary_packed(c, count);
      const std::vector<int64_t> lengths = delta_binary_packed(c, count);
      std::vector<std::string> out;
      out.reserve(count);
      for (size_t i = 0; i < count; ++i) {
        check(lengths[i] >= 0, where + ": a negative length");
        c.need(size_t(lengths[i]));
        std::string v;
        if (!prefixes.empty()) {  // the first bytes of the value before, then its own suffix
          const size_t before = out.empty() ? 0 : out.back().size();
          check(prefixes[i] >= 0 && size_t(prefixes[i]) <= before,
                where + ": a prefix longer than the value before it");
          if (prefixes[i] > 0) v.assign(out.back(), 0, size_t(prefixes[i]));
        }
        v.append(reinterpret_cast<const char*>(c.p + c.at), size_t(lengths[i]));
        c.at += size_t(lengths[i]);
        out.push_back(std::move(v));
      }
      return out;
    }
    case kByteStreamSplit: {  // byte k of every value, then byte k+1 of every value, ...
      const size_t width = type == kFloat || type == kInt32    ? 4
                           : type == kDouble || type == kInt64 ? 8
                           : type == kFixedLenByteArray        ? size_t(std::max(type_length, 0))
                                                               : 0;
      check(width > 0, where + ": BYTE_STREAM_SPLIT values of a type it does not apply to");
      check(count <= size / width, where + ": a BYTE_STREAM_SPLIT page shorter than its values");
      std::string joined(count * width, '\0');
      for (size_t i = 0; i < count; ++i)
        for (size_t k = 0; k < width; ++k) joined[i * width + k] = char(data[k * count + i]);
      return plain(reinterpret_cast<const uint8_t*>(joined.data()), joined.size(), count);
    }
    default:
      throw Error(where + ": value encoding " + std::to_string(encoding) +
                  " is not one Parquet defines for data pages");
  }
}

}  // namespace tach::data::parquet
