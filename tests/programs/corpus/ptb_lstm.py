"""The TF 1.x PTB tutorial (ptb_word_lm.py) shape: embedding, a MultiRNNCell of
BasicLSTMCells unrolled by hand with reuse_variables, a learning rate held in a
variable and assigned, clip_by_global_norm, and the state fed from run to run."""
import numpy as np

rng = np.random.RandomState(4)
vocab_size, hidden_size, num_layers = 30, 8, 2
batch_size, num_steps = 3, 5
raw_data = rng.randint(0, vocab_size, size=batch_size * num_steps * 4 + 1)


def ptb_iterator(raw, batch_size, num_steps):
    data_len = len(raw)
    batch_len = data_len // batch_size
    data = np.reshape(raw[0:batch_size * batch_len], [batch_size, batch_len])
    epoch_size = (batch_len - 1) // num_steps
    for i in range(epoch_size):
        x = data[:, i * num_steps:(i + 1) * num_steps]
        y = data[:, i * num_steps + 1:(i + 1) * num_steps + 1]
        yield (x, y)


class PTBModel(object):
    def __init__(self, is_training):
        self._input_data = tf.placeholder(tf.int32, [batch_size, num_steps])
        self._targets = tf.placeholder(tf.int32, [batch_size, num_steps])

        def lstm_cell():
            return tf.nn.rnn_cell.BasicLSTMCell(hidden_size, forget_bias=0.0, state_is_tuple=True,
                                                reuse=tf.get_variable_scope().reuse)

        cell = tf.nn.rnn_cell.MultiRNNCell([lstm_cell() for _ in range(num_layers)], state_is_tuple=True)
        self._initial_state = cell.zero_state(batch_size, tf.float32)
        with tf.device("/cpu:0"):
            embedding = tf.get_variable("embedding", [vocab_size, hidden_size], dtype=tf.float32)
            inputs = tf.nn.embedding_lookup(embedding, self._input_data)
        outputs = []
        state = self._initial_state
        with tf.variable_scope("RNN"):
            for time_step in range(num_steps):
                if time_step > 0:
                    tf.get_variable_scope().reuse_variables()
                (cell_output, state) = cell(inputs[:, time_step, :], state)
                outputs.append(cell_output)
        output = tf.reshape(tf.concat(outputs, 1), [-1, hidden_size])
        softmax_w = tf.get_variable("softmax_w", [hidden_size, vocab_size], dtype=tf.float32)
        softmax_b = tf.get_variable("softmax_b", [vocab_size], dtype=tf.float32)
        logits = tf.matmul(output, softmax_w) + softmax_b
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(self._targets, [-1]), logits=logits)
        self._cost = cost = tf.reduce_sum(loss) / batch_size
        self._final_state = state
        if not is_training:
            return
        self._lr = tf.Variable(0.0, trainable=False)
        tvars = tf.trainable_variables()
        grads, _ = tf.clip_by_global_norm(tf.gradients(cost, tvars), 5.0)
        optimizer = tf.train.GradientDescentOptimizer(self._lr)
        self._train_op = optimizer.apply_gradients(zip(grads, tvars),
                                                   global_step=tf.train.get_or_create_global_step())
        self._new_lr = tf.placeholder(tf.float32, shape=[], name="new_learning_rate")
        self._lr_update = tf.assign(self._lr, self._new_lr)

    def assign_lr(self, session, lr_value):
        session.run(self._lr_update, feed_dict={self._new_lr: lr_value})


def run_epoch(session, model, eval_op):
    costs, iters = 0.0, 0
    state = session.run(model._initial_state)
    for step, (x, y) in enumerate(ptb_iterator(raw_data, batch_size, num_steps)):
        fetches = {"cost": model._cost, "final_state": model._final_state}
        if eval_op is not None:
            fetches["eval_op"] = eval_op
        feed_dict = {model._input_data: x, model._targets: y}
        for i, (c, h) in enumerate(model._initial_state):
            feed_dict[c] = state[i].c
            feed_dict[h] = state[i].h
        vals = session.run(fetches, feed_dict)
        state = vals["final_state"]
        costs += vals["cost"]
        iters += num_steps
    return np.exp(costs / iters), state


results = {"perplexity": []}
with tf.Graph().as_default():
    tf.set_random_seed(17)
    initializer = tf.random_uniform_initializer(-0.1, 0.1)
    with tf.variable_scope("model", reuse=None, initializer=initializer):
        m = PTBModel(is_training=True)
    with tf.variable_scope("model", reuse=True, initializer=initializer):
        mvalid = PTBModel(is_training=False)
    with tf.Session() as session:
        tf.global_variables_initializer().run()
        for i in range(2):
            lr_decay = 0.5 ** max(i - 1, 0.0)
            m.assign_lr(session, 1.0 * lr_decay)
            train_perplexity, _ = run_epoch(session, m, m._train_op)
            valid_perplexity, state = run_epoch(session, mvalid, None)
            results["perplexity"].append((session.run(m._lr), train_perplexity, valid_perplexity))
        results["state"] = state
        results["global_step"] = session.run(tf.train.get_global_step())
        results["names"] = sorted(v.op.name for v in tf.global_variables())
