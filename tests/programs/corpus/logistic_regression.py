"""aymericdamien TensorFlow-Examples: logistic_regression.py (softmax regression with a
hand-written cross entropy, mini-batches, accuracy) on sklearn's digits as MNIST."""
import numpy as np
from sklearn.datasets import load_digits

digits = load_digits()
images = (digits.data / 16.0).astype(np.float32)
labels = np.eye(10, dtype=np.float32)[digits.target]
train_x, train_y = images[:400], labels[:400]
test_x, test_y = images[1500:1700], labels[1500:1700]

learning_rate = 0.5
training_epochs = 3
batch_size = 100

x = tf.placeholder(tf.float32, [None, 64])
y = tf.placeholder(tf.float32, [None, 10])
W = tf.Variable(tf.zeros([64, 10]))
b = tf.Variable(tf.zeros([10]))
pred = tf.nn.softmax(tf.matmul(x, W) + b)
cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(pred), reduction_indices=1))
optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)
init = tf.global_variables_initializer()

results = {"epochs": []}
with tf.Session() as sess:
    sess.run(init)
    for epoch in range(training_epochs):
        avg_cost = 0.0
        total_batch = int(len(train_x) / batch_size)
        for i in range(total_batch):
            batch_xs = train_x[i * batch_size:(i + 1) * batch_size]
            batch_ys = train_y[i * batch_size:(i + 1) * batch_size]
            _, c = sess.run([optimizer, cost], feed_dict={x: batch_xs, y: batch_ys})
            avg_cost += c / total_batch
        results["epochs"].append("Epoch: %04d cost= %.6f" % (epoch + 1, avg_cost))
    correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    results["accuracy"] = accuracy.eval({x: test_x, y: test_y})
    results["W"] = sess.run(W)
