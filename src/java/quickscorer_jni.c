/* The JNI side of org.quickscorer.Model: each native method one call of libquickscorer
 * (quickscorer.h). The Java side has checked the arrays' lengths against the row counts; the
 * rows and scores are pinned (GetPrimitiveArrayCritical, no copy) only around the scoring
 * call, which calls nothing of the JVM. A failed call throws QuickScorerException with the
 * library's status and message. */
#include <jni.h>
#include <stdint.h>

#include <quickscorer.h>

static void throw_status(JNIEnv* env, int status)
{
    jclass cls = (*env)->FindClass(env, "org/quickscorer/QuickScorerException");
    if (cls == NULL)
        return; /* NoClassDefFoundError pending */
    jmethodID init = (*env)->GetMethodID(env, cls, "<init>", "(ILjava/lang/String;)V");
    jstring msg = (*env)->NewStringUTF(env, qs_last_error());
    if (init == NULL || msg == NULL)
        return;
    jobject exc = (*env)->NewObject(env, cls, init, (jint)status, msg);
    if (exc != NULL)
        (*env)->Throw(env, (jthrowable)exc);
}

static void throw_memory(JNIEnv* env)
{
    jclass cls = (*env)->FindClass(env, "java/lang/OutOfMemoryError");
    if (cls != NULL)
        (*env)->ThrowNew(env, cls, "quickscorer: the JVM could not pin an array");
}

JNIEXPORT jstring JNICALL Java_org_quickscorer_Model_nativeVersion(JNIEnv* env, jclass cls)
{
    (void)cls;
    return (*env)->NewStringUTF(env, qs_version());
}

JNIEXPORT jlong JNICALL Java_org_quickscorer_Model_nativeOpen(JNIEnv* env, jclass cls,
                                                             jstring path)
{
    (void)cls;
    const char* p = (*env)->GetStringUTFChars(env, path, NULL);
    if (p == NULL)
        return 0;
    qs_model* m = NULL;
    int st = qs_open(p, &m);
    (*env)->ReleaseStringUTFChars(env, path, p);
    if (st != QS_OK) {
        throw_status(env, st);
        return 0;
    }
    return (jlong)(intptr_t)m;
}

JNIEXPORT jlong JNICALL Java_org_quickscorer_Model_nativeOpenMemory(JNIEnv* env, jclass cls,
                                                                   jbyteArray data)
{
    (void)cls;
    jsize n = (*env)->GetArrayLength(env, data);
    jbyte* p = (*env)->GetByteArrayElements(env, data, NULL);
    if (p == NULL)
        return 0;
    qs_model* m = NULL;
    int st = qs_open_memory(p, (size_t)n, &m); /* copies the bytes */
    (*env)->ReleaseByteArrayElements(env, data, p, JNI_ABORT);
    if (st != QS_OK) {
        throw_status(env, st);
        return 0;
    }
    return (jlong)(intptr_t)m;
}

JNIEXPORT jlongArray JNICALL Java_org_quickscorer_Model_nativeCounts(JNIEnv* env, jclass cls,
                                                                    jlong handle)
{
    (void)cls;
    const qs_model* m = (const qs_model*)(intptr_t)handle;
    int64_t c[4];
    int st = qs_num_features(m, &c[0]);
    if (st == QS_OK)
        st = qs_num_outputs(m, 0, &c[1]);
    if (st == QS_OK)
        st = qs_num_outputs(m, QS_RAW_SCORE, &c[2]);
    if (st == QS_OK)
        st = qs_num_trees(m, &c[3]);
    if (st != QS_OK) {
        throw_status(env, st);
        return NULL;
    }
    jlongArray out = (*env)->NewLongArray(env, 4);
    if (out != NULL) {
        jlong v[4] = {(jlong)c[0], (jlong)c[1], (jlong)c[2], (jlong)c[3]};
        (*env)->SetLongArrayRegion(env, out, 0, 4, v);
    }
    return out;
}

/* rows scored into out by one library call, both pinned around it */
static void predict(JNIEnv* env, jlong handle, jarray rows, int is32, jint n_rows, jint flags,
                    jint n_threads, jarray out, int leaves)
{
    const qs_model* m = (const qs_model*)(intptr_t)handle;
    void* x = (*env)->GetPrimitiveArrayCritical(env, rows, NULL);
    if (x == NULL) {
        throw_memory(env);
        return;
    }
    void* o = (*env)->GetPrimitiveArrayCritical(env, out, NULL);
    if (o == NULL) {
        (*env)->ReleasePrimitiveArrayCritical(env, rows, x, JNI_ABORT);
        throw_memory(env);
        return;
    }
    int st;
    if (leaves)
        st = qs_predict_leaf(m, (const float*)x, n_rows, n_threads, (int32_t*)o);
    else if (is32)
        st = qs_predict(m, (const float*)x, n_rows, flags, n_threads, (double*)o);
    else
        st = qs_predict_f64(m, (const double*)x, n_rows, flags, n_threads, (double*)o);
    (*env)->ReleasePrimitiveArrayCritical(env, out, o, 0);
    (*env)->ReleasePrimitiveArrayCritical(env, rows, x, JNI_ABORT);
    if (st != QS_OK)
        throw_status(env, st);
}

JNIEXPORT void JNICALL Java_org_quickscorer_Model_nativePredict(JNIEnv* env, jclass cls,
                                                               jlong handle, jfloatArray rows,
                                                               jint n_rows, jint flags,
                                                               jint n_threads,
                                                               jdoubleArray out)
{
    (void)cls;
    predict(env, handle, rows, 1, n_rows, flags, n_threads, out, 0);
}

JNIEXPORT void JNICALL Java_org_quickscorer_Model_nativePredictF64(JNIEnv* env, jclass cls,
                                                                  jlong handle,
                                                                  jdoubleArray rows,
                                                                  jint n_rows, jint flags,
                                                                  jint n_threads,
                                                                  jdoubleArray out)
{
    (void)cls;
    predict(env, handle, rows, 0, n_rows, flags, n_threads, out, 0);
}

JNIEXPORT void JNICALL Java_org_quickscorer_Model_nativePredictLeaf(JNIEnv* env, jclass cls,
                                                                   jlong handle,
                                                                   jfloatArray rows,
                                                                   jint n_rows, jint n_threads,
                                                                   jintArray out)
{
    (void)cls;
    predict(env, handle, rows, 1, n_rows, 0, n_threads, out, 1);
}

JNIEXPORT void JNICALL Java_org_quickscorer_Model_nativeClose(JNIEnv* env, jclass cls,
                                                             jlong handle)
{
    (void)env;
    (void)cls;
    qs_close((qs_model*)(intptr_t)handle);
}
