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
