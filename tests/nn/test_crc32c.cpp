// CRC-32C against published vectors: the "123456789" check value of the CRC catalogue and
// the four 32-byte vectors of RFC 3720 (iSCSI) appendix B.4; pieces chain to the whole.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/io/crc32c.h"

using namespace sonata;

TEST_CASE("crc32c matches the published check values", "[io][crc32c]") {
  const std::string check = "123456789";
  CHECK(crc32c_extend(0, check.data(), check.size()) == 0xE3069283u);
  CHECK(crc32c_extend(0, nullptr, 0) == 0u);

  std::vector<uint8_t> zeros(32, 0x00), ones(32, 0xFF), up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[size_t(i)] = uint8_t(i);
    down[size_t(i)] = uint8_t(31 - i);
  }
  CHECK(crc32c_extend(0, zeros.data(), 32) == 0x8A9136AAu);
  CHECK(crc32c_extend(0, ones.data(), 32) == 0x62A8AB43u);
  CHECK(crc32c_extend(0, up.data(), 32) == 0x46DD794Eu);
  CHECK(crc32c_extend(0, down.data(), 32) == 0x113FDB5Cu);
}

TEST_CASE("crc32c over pieces is the crc32c of the whole", "[io][crc32c]") {
  std::vector<uint8_t> bytes(203);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 131 + 7);
  const uint32_t whole = crc32c_extend(0, bytes.data(), bytes.size());
  // Every split point, so that both the 8-byte and the byte-at-a-time paths start anywhere.
  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    INFO("cut at " << cut);
    const uint32_t head = crc32c_extend(0, bytes.data(), cut);
    CHECK(crc32c_extend(head, bytes.data() + cut, bytes.size() - cut) == whole);
  }
  bytes[100] ^= 0x01;
  CHECK(crc32c_extend(0, bytes.data(), bytes.size()) != whole);
}
