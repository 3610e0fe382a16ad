#pragma once
// CRC-32C (Castagnoli; reflected polynomial 0x82F63B78), the checksum of iSCSI (RFC 3720),
// ext4 and Snappy, over bytes in any number of pieces: the checksum sonata writes into its
// safetensors files (engine/io/safetensors_checksum.h). Software slice-by-8, a few GB/s.
#include <cstddef>
#include <cstdint>

namespace sonata {

// The CRC-32C of the bytes seen so far followed by `data`: crc32c_extend(0, ...) starts one,
// and crc32c_extend(crc32c_extend(0, a), b) is the CRC-32C of a then b. "123456789" gives
// 0xE3069283.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t size);

}  // namespace sonata
