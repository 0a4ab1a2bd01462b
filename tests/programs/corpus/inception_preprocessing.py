"""The slim/inception preprocessing TF1 image models use: decode_jpeg of an encoded
image, convert_image_dtype, sample_distorted_bounding_box with seeds and
min_object_covered, tf.slice to the box, resize_images (bilinear) and random
flip, distort_color's random_brightness/saturation/hue/contrast in one fixed order,
clip_by_value, and the eval path central_crop + resize_bilinear(align_corners=False),
then subtract 0.5 and multiply by 2."""
import numpy as np

rng = np.random.RandomState(31)
raw = rng.randint(0, 256, size=(20, 24, 3)).astype(np.uint8)
jpeg_bytes_t = tf.image.encode_jpeg(tf.constant(raw), quality=95)

with tf.Graph().as_default():
    tf.set_random_seed(13)
    jpeg = tf.placeholder(tf.string, [])
    image = tf.image.decode_jpeg(jpeg, channels=3)
    image = tf.image.convert_image_dtype(image, dtype=tf.float32)
    bbox = tf.constant([0.0, 0.0, 1.0, 1.0], dtype=tf.float32, shape=[1, 1, 4])
    begin, size, distort_bbox = tf.image.sample_distorted_bounding_box(
        tf.shape(image), bounding_boxes=bbox, min_object_covered=0.1,
        aspect_ratio_range=[0.75, 1.33], area_range=[0.05, 1.0], max_attempts=100,
        use_image_if_no_bounding_boxes=True, seed=5)
    cropped = tf.slice(image, begin, size)
    distorted = tf.image.resize_images(cropped, [16, 16], method=tf.image.ResizeMethod.BILINEAR)
    distorted = tf.image.random_flip_left_right(distorted, seed=6)
    distorted = tf.image.random_brightness(distorted, max_delta=32. / 255., seed=7)
    distorted = tf.image.random_saturation(distorted, lower=0.5, upper=1.5, seed=8)
    distorted = tf.image.random_hue(distorted, max_delta=0.2, seed=9)
    distorted = tf.image.random_contrast(distorted, lower=0.5, upper=1.5, seed=10)
    distorted = tf.clip_by_value(distorted, 0.0, 1.0)
    train_image = tf.multiply(tf.subtract(distorted, 0.5), 2.0)

    eval_image = tf.image.central_crop(image, central_fraction=0.875)
    eval_image = tf.expand_dims(eval_image, 0)
    eval_image = tf.image.resize_bilinear(eval_image, [16, 16], align_corners=False)
    eval_image = tf.multiply(tf.subtract(tf.squeeze(eval_image, [0]), 0.5), 2.0)
    padded = tf.image.pad_to_bounding_box(image, 2, 3, 26, 30)
    box = tf.image.crop_to_bounding_box(padded, 1, 1, 10, 12)
    drawn = tf.image.draw_bounding_boxes(tf.expand_dims(image, 0), tf.constant([[[0.1, 0.2, 0.6, 0.7]]]))

with tf.Session() as s0:
    data = s0.run(jpeg_bytes_t)
with tf.Session(graph=image.graph) as sess:
    feed = {jpeg: data}
    results = {
        "decoded": sess.run(image, feed),
        "train": [sess.run([begin, size, train_image], feed) for _ in range(2)],
        "eval": sess.run(eval_image, feed),
        "boxes": sess.run([box, drawn], feed),
        "shapes": [train_image.get_shape().as_list(), eval_image.get_shape().as_list()],
    }
