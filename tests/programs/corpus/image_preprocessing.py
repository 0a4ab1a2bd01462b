"""cifar10_input.py's distorted_inputs and the TF 1.x image tutorials: random_crop,
random_flip_left_right, random_brightness and random_contrast with op seeds,
per_image_standardization, resize_images (bilinear and nearest), central_crop,
resize_image_with_crop_or_pad, rgb_to_grayscale, convert_image_dtype and encode/decode
PNG round trip, over a synthetic uint8 image batch."""
import numpy as np

rng = np.random.RandomState(3)
raw = rng.randint(0, 256, size=(12, 12, 3)).astype(np.uint8)
IMAGE_SIZE = 8

image = tf.placeholder(tf.uint8, [12, 12, 3])
reshaped_image = tf.cast(image, tf.float32)
height, width = IMAGE_SIZE, IMAGE_SIZE
distorted_image = tf.random_crop(reshaped_image, [height, width, 3], seed=1)
distorted_image = tf.image.random_flip_left_right(distorted_image, seed=2)
distorted_image = tf.image.random_brightness(distorted_image, max_delta=63, seed=3)
distorted_image = tf.image.random_contrast(distorted_image, lower=0.2, upper=1.8, seed=4)
float_image = tf.image.per_image_standardization(distorted_image)
float_image.set_shape([height, width, 3])

eval_image = tf.image.resize_image_with_crop_or_pad(reshaped_image, height, width)
eval_std = tf.image.per_image_standardization(eval_image)
as_float = tf.image.convert_image_dtype(image, tf.float32)
resized = tf.image.resize_images(as_float, [6, 6])
resized_nn = tf.image.resize_images(image, [5, 7], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
central = tf.image.central_crop(as_float, 0.5)
gray = tf.image.rgb_to_grayscale(as_float)
hsv = tf.image.rgb_to_hsv(as_float)
flipped = tf.image.flip_up_down(image)
png = tf.image.encode_png(image)
decoded = tf.image.decode_png(png, channels=3)
batch = tf.expand_dims(as_float, 0)
boxes = tf.image.crop_and_resize(batch, [[0.1, 0.1, 0.8, 0.9]], [0], [4, 4])

results = {}
with tf.Session() as sess:
    feed = {image: raw}
    results["train"] = [sess.run(float_image, feed) for _ in range(2)]
    results["eval"] = sess.run([eval_image, eval_std], feed)
    results["ops"] = sess.run([as_float, resized, resized_nn, central, gray, hsv, flipped, boxes], feed)
    results["png_round_trip"] = bool(np.array_equal(sess.run(decoded, feed), raw))
    results["static"] = [float_image.get_shape().as_list(), resized_nn.dtype.name, central.get_shape().as_list(),
                         resized.get_shape().as_list()]
