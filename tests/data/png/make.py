# Regenerates the PNGs of ImageIoTest.AlphaIsDroppedAsPilDoes with PIL (python3-pil):
#   /usr/bin/python3 make.py
import numpy as np
from PIL import Image

rgba = np.zeros((4, 5, 4), np.uint8)
rgba[..., 0] = np.arange(20).reshape(4, 5) * 10
rgba[..., 1] = 200
rgba[..., 2] = 7
rgba[..., 3] = np.array([0, 128, 255, 60, 1] * 4).reshape(4, 5)
Image.fromarray(rgba, 'RGBA').save('rgba_4x5.png')
ga = np.zeros((3, 2, 2), np.uint8)
ga[..., 0] = [[0, 50], [100, 150], [200, 250]]
ga[..., 1] = [[0, 10], [255, 128], [3, 77]]
Image.fromarray(ga, 'LA').save('gray_alpha_3x2.png')


# 16 bits per channel, no gAMA chunk, written by hand (PIL writes no 16-bit RGB): for
# ImageIoTest.SixteenBitPngsKeepTheHighByte. Values v; Ember (as torchvision's read_image and
# PIL's RGB decoder) reads v >> 8.
def png16(path, arr, color_type):
    import struct
    import zlib

    def chunk(kind, data):
        body = kind + data
        return struct.pack('>I', len(data)) + body + struct.pack('>I', zlib.crc32(body))

    h, w = arr.shape[:2]
    rows = b''.join(b'\0' + arr[y].astype('>u2').tobytes() for y in range(h))
    ihdr = struct.pack('>IIBBBBB', w, h, 16, color_type, 0, 0, 0)
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + chunk(b'IDAT', zlib.compress(rows)) +
                chunk(b'IEND', b''))


png16('rgb16_2x3.png', (np.arange(18).reshape(2, 3, 3) * 3641 + 255).astype(np.uint16), 2)
png16('gray16_2x2.png', np.array([[0, 257], [32768, 65535]], np.uint16), 0)
