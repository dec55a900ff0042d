# Regenerates the .npy files of tests/npy_test.cpp with numpy (python3-numpy): /usr/bin/python3 make.py
import numpy as np
from numpy.lib import format as fmt

np.save('f32_2x3.npy', np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1)
np.save('f64_fortran_2x3.npy', np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)))
np.save('bool_4.npy', np.array([True, False, False, True]))
np.save('i64_scalar.npy', np.array(-7, dtype=np.int64))
np.save('u8_5.npy', np.array([0, 1, 127, 128, 255], dtype=np.uint8))
np.save('f16_3.npy', np.array([0.5, -2, 65504], dtype=np.float16))
np.save('i32_empty_0x4.npy', np.zeros((0, 4), dtype=np.int32))
np.save('big_endian_f4.npy', np.arange(3, dtype='>f4'))
with open('f32_v2.npy', 'wb') as f:  # a version 2.0 header
    fmt.write_array(f, np.array([[1.5, 2.5]], dtype=np.float32), version=(2, 0))
